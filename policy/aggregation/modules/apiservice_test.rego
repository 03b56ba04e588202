package statusfold.builtin.apiservice_test

import data.statusfold.builtin.apiservice

test_available_is_positive if not apiservice.combine.conditions.negative

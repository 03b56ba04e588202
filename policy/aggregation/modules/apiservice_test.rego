package statusfold.builtin.apiservice_test

import data.statusfold.builtin.apiservice

# Available is positive: no negative types, no presence rules.
test_available_is_positive if apiservice.combine.conditions == {"op": "conditions"}

package statusfold.builtin.generic_test

import data.statusfold.builtin.generic

test_everything_generic if generic.combine == {"*": "generic"}

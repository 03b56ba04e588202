package statusfold.builtin.ingress_test

import data.statusfold.builtin.ingress

test_ingress_union_only_if_all if ingress.combine.loadBalancer.ingress == "union_if_all"

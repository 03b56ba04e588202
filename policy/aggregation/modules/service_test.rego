package statusfold.builtin.service_test

import data.statusfold.builtin.service

test_ingress_union_only_if_all if service.combine.loadBalancer.ingress == "union_if_all"

package statusfold.builtin.replicaset_test

import data.statusfold.builtin.replicaset

test_available_is_min if replicaset.combine.availableReplicas == "count_min"

test_replica_failure_any_true if "ReplicaFailure" in replicaset.combine.conditions.negative

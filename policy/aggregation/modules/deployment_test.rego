package statusfold.builtin.deployment_test

import data.statusfold.builtin.deployment

# More-is-better counts must take the minimum, size and badness counts the maximum.
test_counts_polarity if {
	every f in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
		deployment.combine[f] == "count_min"
	}
	every f in ["replicas", "unavailableReplicas", "terminatingReplicas"] {
		deployment.combine[f] == "count_max"
	}
}

test_replica_failure_is_negative if {
	"ReplicaFailure" in deployment.combine.conditions.negative
	not "Progressing" in deployment.combine.conditions.negative
	not "Available" in deployment.combine.conditions.negative
}

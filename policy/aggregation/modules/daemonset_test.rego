package statusfold.builtin.daemonset_test

import data.statusfold.builtin.daemonset

test_counts_clamped_to_own_target if {
	every f in ["updatedNumberScheduled", "numberAvailable", "numberReady"] {
		daemonset.combine[f] == {"op": "sum_clamped", "target": "desiredNumberScheduled"}
	}
	daemonset.combine.desiredNumberScheduled == "sum"
}

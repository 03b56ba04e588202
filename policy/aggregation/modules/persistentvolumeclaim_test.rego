package statusfold.builtin.persistentvolumeclaim_test

import data.statusfold.builtin.persistentvolumeclaim

test_phase_order_best_first if {
	persistentvolumeclaim.combine.phase.order == ["Bound", "Pending", "Lost"]
}

package statusfold.builtin.statefulset_test

import data.statusfold.builtin.statefulset

test_revisions_are_paired if {
	statefulset.combine.currentRevision.op == "revision"
	statefulset.combine.updateRevision == statefulset.combine.currentRevision
}

test_ready_is_min if statefulset.combine.readyReplicas == "count_min"

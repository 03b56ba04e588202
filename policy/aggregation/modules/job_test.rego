package statusfold.builtin.job_test

import data.statusfold.builtin.job

test_presence_rules if {
	job.combine.conditions.presence.Complete == "all"
	job.combine.conditions.presence.Failed == "any"
}

test_failed_count_is_max if job.combine.failed == "count_max"

test_failed_wins_over_complete if {
	st := {
		"startTime": "2025-11-01T10:00:00Z",
		"completionTime": "2025-11-01T10:05:00Z",
		"active": 2,
		"conditions": [
			{"type": "Complete", "status": "True"},
			{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"},
		],
	}
	out := job.finalize with input as {"status": st}
	not out.completionTime
	out.active == 0
	out.conditions == [
		{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"},
		{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
	]
}

test_complete_keeps_completion_time_after_start if {
	st := {
		"startTime": "2025-11-01T10:00:00Z",
		"completionTime": "2025-11-01T09:00:00Z",
		"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}],
	}
	out := job.finalize with input as {"status": st}
	out.completionTime == "2025-11-01T10:00:00Z"
	out.startTime == "2025-11-01T10:00:00Z"
}

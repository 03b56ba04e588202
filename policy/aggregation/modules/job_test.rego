package statusfold.builtin.job_test

import data.statusfold.builtin.job

test_presence_rules if {
	job.combine.conditions.presence.Complete == "all"
	job.combine.conditions.presence.Failed == "any"
}

test_failed_count_is_max if job.combine.failed == "count_max"

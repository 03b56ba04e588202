package statusfold.builtin.pod_test

import data.statusfold.builtin.pod

always := {"restartPolicy": "Always"}

test_crashloop_is_degraded if {
	pod.pod_health(always, {"phase": "Running", "containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}) == "Degraded"
}

test_crashloop_ignored_for_never if {
	pod.pod_health({"restartPolicy": "Never"}, {"phase": "Running", "containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}) == "Progressing"
}

test_running_ready_is_healthy if {
	pod.pod_health(always, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}) == "Healthy"
}

test_running_not_ready_restarted_is_degraded if {
	pod.pod_health(always, {"phase": "Running", "containerStatuses": [{"lastState": {"terminated": {"exitCode": 1}}}]}) == "Degraded"
}

test_phases if {
	pod.pod_health(always, {"phase": "Pending"}) == "Progressing"
	pod.pod_health(always, {"phase": "Succeeded"}) == "Healthy"
	pod.pod_health(always, {"phase": "Failed"}) == "Degraded"
	pod.pod_health(always, {}) == "Unknown"
}

test_rank_unreported_is_unknown if {
	pod.wec_rank == 5 with input as {"object": {"spec": always}, "wec": {"name": "a", "status": null}}
}

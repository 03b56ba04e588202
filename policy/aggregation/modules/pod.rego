# Aggregation of core/v1 Pod status across WECs.
# Argo CD's Pod health reads the phase, container states, readiness and spec.restartPolicy together,
# so no per-field rule keeps it: the aggregate is the whole status of the worst WEC (by Argo CD's
# health, computed below per WEC and cached), first WEC by name on ties.
package statusfold.builtin.pod

import data.statusfold.builtin.health

combine := {"*": "from_worst"}

wec_rank := health.rank[pod_health(object.get(input.object, "spec", {}), health.status_of(input.wec))]

restart_policy(spec) := object.get(spec, "restartPolicy", "")

waiting_error(cs) if startswith(cs.state.waiting.reason, "Err")

waiting_error(cs) if endswith(cs.state.waiting.reason, "Error")

waiting_error(cs) if endswith(cs.state.waiting.reason, "BackOff")

ready(status) if {
	some c in object.get(status, "conditions", [])
	c.type == "Ready"
	c.status == "True"
}

terminated_before(status) if {
	some cs in object.get(status, "containerStatuses", [])
	cs.lastState.terminated
}

pod_health(spec, status) := "Degraded" if {
	restart_policy(spec) == "Always"
	some cs in object.get(status, "containerStatuses", [])
	waiting_error(cs)
} else := "Progressing" if {
	status.phase == "Pending"
} else := "Healthy" if {
	status.phase == "Succeeded"
} else := "Degraded" if {
	status.phase == "Failed"
} else := "Healthy" if {
	status.phase == "Running"
	restart_policy(spec) == "Always"
	ready(status)
} else := "Degraded" if {
	status.phase == "Running"
	restart_policy(spec) == "Always"
	terminated_before(status)
} else := "Progressing" if {
	status.phase == "Running"
	restart_policy(spec) in {"Always", "OnFailure", "Never"}
} else := "Unknown"

# Aggregation of autoscaling HorizontalPodAutoscaler status across WECs.
# Argo CD reads the conditions in order and the first decisive one wins (FailedGetScale … →
# Degraded; SucceededRescale, DesiredWithinRange … → Healthy; none → Progressing). Order-dependent
# rules do not combine per type, so the conditions are those of the worst WEC (by that rule,
# computed per WEC and cached); the other fields follow the generic rules.
package statusfold.builtin.horizontalpodautoscaler

import data.statusfold.builtin.health

combine := {
	"conditions": "from_worst",
	"lastScaleTime": "latest",
	"observedGeneration": "generation",
}

wec_rank := health.rank[hpa_health(object.get(health.status_of(input.wec), "conditions", []))]

degraded_states := {["AbleToScale", "FailedGetScale"], ["AbleToScale", "FailedUpdateScale"], ["ScalingActive", "FailedGetResourceMetric"], ["ScalingActive", "InvalidSelector"]}

healthy_states := {["AbleToScale", "SucceededRescale"], ["ScalingLimited", "DesiredWithinRange"], ["ScalingLimited", "TooFewReplicas"], ["ScalingLimited", "TooManyReplicas"]}

decide(c) := "Degraded" if {
	[c.type, c.reason] in degraded_states
} else := "Healthy" if {
	[c.type, c.reason] in healthy_states
}

hpa_health(conds) := decisive[0] if {
	decisive := [d | some c in conds; d := decide(c)]
	count(decisive) > 0
} else := "Progressing"

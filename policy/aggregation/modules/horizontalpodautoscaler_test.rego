package statusfold.builtin.horizontalpodautoscaler_test

import data.statusfold.builtin.horizontalpodautoscaler as hpa

test_first_decisive_wins if {
	hpa.hpa_health([{"type": "AbleToScale", "reason": "SucceededRescale"}, {"type": "ScalingActive", "reason": "InvalidSelector"}]) == "Healthy"
	hpa.hpa_health([{"type": "ScalingActive", "reason": "InvalidSelector"}, {"type": "AbleToScale", "reason": "SucceededRescale"}]) == "Degraded"
}

test_no_decisive_is_progressing if {
	hpa.hpa_health([{"type": "ScalingActive", "reason": "ValidMetricFound"}]) == "Progressing"
	hpa.hpa_health([]) == "Progressing"
}

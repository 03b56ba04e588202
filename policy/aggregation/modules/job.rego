# Aggregation of batch/v1 Job status across WECs.
# Argo CD reads conditions by presence, not status: a Failed entry → Degraded, else a Complete entry
# → Healthy, else Progressing. So Complete appears only when every WEC completed, Failed when any
# WEC failed, never as an Unknown entry. Counters: succeeded is the minimum (seed rule); failed and
# active take the maximum (more is worse / more work left).
package statusfold.builtin.job

combine := {
	"active": "count_max",
	"ready": "count_min",
	"succeeded": "count_min",
	"failed": "count_max",
	"terminating": "count_max",
	"startTime": "latest",
	"completionTime": "latest",
	"conditions": {
		"op": "conditions",
		"negative": ["FailureTarget"],
		"presence": {"Complete": "all", "SuccessCriteriaMet": "all", "Failed": "any"},
	},
}

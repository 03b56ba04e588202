# Aggregation of apps/v1 DaemonSet status across WECs.
# Each WEC has its own target (desiredNumberScheduled: its number of eligible nodes), so neither
# min nor max keeps Argo CD's health: the aggregate sums the targets, and sums each WEC's counts
# clamped to its own target, so "updated < desired" holds in the sum exactly when it holds in some WEC.
package statusfold.builtin.daemonset

clamped := {"op": "sum_clamped", "target": "desiredNumberScheduled"}

combine := {
	"desiredNumberScheduled": "sum",
	"currentNumberScheduled": clamped,
	"updatedNumberScheduled": clamped,
	"numberReady": clamped,
	"numberAvailable": clamped,
	"numberMisscheduled": "sum",
	"numberUnavailable": "sum",
	"collisionCount": "max",
	"observedGeneration": "generation",
	"conditions": {"op": "conditions"},
}

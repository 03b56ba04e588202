# Aggregation of apps/v1 Deployment status across WECs.
# Argo CD reads: spec.paused, observedGeneration, the Progressing condition's reason
# (ProgressDeadlineExceeded → Degraded), updatedReplicas and availableReplicas against
# spec.replicas (the same target in every WEC), and replicas > updatedReplicas (old pods left).
# So counts where more is better take the minimum, counts where more is worse (or total size) take
# the maximum, missing counts read as 0 as Argo CD reads them, and ReplicaFailure is negative.
package statusfold.builtin.deployment

combine := {
	"replicas": "count_max",
	"updatedReplicas": "count_min",
	"readyReplicas": "count_min",
	"availableReplicas": "count_min",
	"unavailableReplicas": "count_max",
	"terminatingReplicas": "count_max",
	"collisionCount": "max",
	"observedGeneration": "generation",
	"conditions": {"op": "conditions", "negative": ["ReplicaFailure"]},
}

# Aggregation of apps/v1 ReplicaSet status across WECs.
# Argo CD reads observedGeneration, ReplicaFailure=True (→ Degraded) and availableReplicas against
# spec.replicas (the same target in every WEC).
package statusfold.builtin.replicaset

combine := {
	"replicas": "count_max",
	"fullyLabeledReplicas": "count_min",
	"readyReplicas": "count_min",
	"availableReplicas": "count_min",
	"terminatingReplicas": "count_max",
	"observedGeneration": "generation",
	"conditions": {"op": "conditions", "negative": ["ReplicaFailure"]},
}

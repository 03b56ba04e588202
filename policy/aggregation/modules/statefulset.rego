# Aggregation of apps/v1 StatefulSet status across WECs.
# Argo CD reads observedGeneration (0 or behind → Progressing), readyReplicas and updatedReplicas
# against spec.replicas (and the partition), and currentRevision != updateRevision. Revision names
# differ between WECs, so the pair comes from one WEC: an unfinished one if any, else both fields
# get the first WEC's (equal) revision.
package statusfold.builtin.statefulset

revision := {"op": "revision", "current": "currentRevision", "update": "updateRevision"}

combine := {
	"replicas": "count_max",
	"readyReplicas": "count_min",
	"currentReplicas": "count_min",
	"updatedReplicas": "count_min",
	"availableReplicas": "count_min",
	"collisionCount": "max",
	"currentRevision": revision,
	"updateRevision": revision,
	"observedGeneration": "generation",
	"conditions": {"op": "conditions"},
}

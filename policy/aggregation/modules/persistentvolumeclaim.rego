# Aggregation of core/v1 PersistentVolumeClaim status across WECs.
# Argo CD: Bound → Healthy, Pending → Progressing, Lost → Degraded, anything else → Unknown. The
# phase is the worst WEC's (unlisted or missing phases rank worst, as Unknown is Argo's worst).
package statusfold.builtin.persistentvolumeclaim

combine := {
	"phase": {"op": "worst", "order": ["Bound", "Pending", "Lost"]},
	"conditions": {"op": "conditions"},
}

# Aggregation of core/v1 Service status across WECs.
# Argo CD: a LoadBalancer Service is Healthy once loadBalancer.ingress is non-empty. The aggregate's
# ingress list is the union of all WECs' entries when every WEC has at least one, else empty.
package statusfold.builtin.service

combine := {
	"loadBalancer": {"ingress": "union_if_all"},
	"conditions": {"op": "conditions"},
}

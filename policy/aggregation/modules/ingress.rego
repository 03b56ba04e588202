# Aggregation of networking.k8s.io/v1 Ingress status across WECs.
# Argo CD: Healthy once loadBalancer.ingress is non-empty, else Progressing. The aggregate's list is
# the union of all WECs' entries when every WEC has at least one, else empty.
package statusfold.builtin.ingress

combine := {"loadBalancer": {"ingress": "union_if_all"}}

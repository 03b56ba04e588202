# Aggregation of apiregistration.k8s.io/v1 APIService status across WECs.
# Argo CD: Available=True → Healthy, otherwise (or missing) Progressing. Three-valued combination
# (True only when True everywhere) keeps that.
package statusfold.builtin.apiservice

combine := {"conditions": {"op": "conditions"}}

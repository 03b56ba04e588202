package classifier

import "testing"

// BenchmarkPrune measures pruning a Deployment-sized reported status with two pointers, as the
// controller does for every WorkStatus update (Pruner built once per classifier).
func BenchmarkPrune(b *testing.B) {
	status := js(b, `{"observedGeneration":3,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
		"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."},
		{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ReplicaSet \"nginx-5d\" has successfully progressed."}]}`)
	p := NewPruner(newClassifier("deployments.v1.apps", dontPropagate(ptr("status", "conditions", "1", "message"), ptr("status", "updatedReplicas"))))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p.Prune(status) == nil {
			b.Fatal("nil")
		}
	}
}

package offline_test

import (
	"context"
	"testing"

	kjson "sigs.k8s.io/json"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/webhooks/offline"
)

// typicalCollector has a filter, a groupBy, COUNT and SUM.
var typicalCollector = []byte(`{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "ready"},
"spec": {"filter": "returned.status.conditions.exists(c, c.type == \"Available\" && c.status == \"True\")",
"groupBy": [{"name": "region", "def": "inventory.labels[\"region\"]"}],
"combinedFields": [{"name": "n", "type": "COUNT"}, {"name": "ready", "type": "SUM", "subject": "returned.status.readyReplicas"}]}}`)

// BenchmarkNewAdmission is the start-up cost of `statusfold validate`: the embedded CRDs read,
// their structural schemas and validators built.
func BenchmarkNewAdmission(b *testing.B) {
	for b.Loop() {
		if _, err := offline.NewAdmission(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdmit is kubectl's and the apiserver's part for one typical collector (decoding,
// annotation, defaults, the defaulting webhook, the schema's validation), without the
// validating webhook's compile.
func BenchmarkAdmit(b *testing.B) {
	adm, err := offline.NewAdmission()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if o, _ := adm.Admit(ctx, "f.yaml", typicalCollector); o.Err != nil {
			b.Fatal(o.Err)
		}
	}
}

// BenchmarkStrictDecodeBaseline is what `statusfold validate` did before, for the same
// collector: strict decoding into the Go type (sigs.k8s.io/json).
func BenchmarkStrictDecodeBaseline(b *testing.B) {
	for b.Loop() {
		sc := &controlv1alpha1.StatusCollector{}
		if strict, err := kjson.UnmarshalStrict(typicalCollector, sc); err != nil || len(strict) > 0 {
			b.Fatal(err, strict)
		}
	}
}

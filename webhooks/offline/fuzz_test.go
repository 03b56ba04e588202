package offline_test

import (
	"context"
	"testing"

	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
)

// FuzzAdmit feeds arbitrary documents to statusfold validate's path: whatever the input, it ends
// in an object or an error, never a panic.
func FuzzAdmit(f *testing.F) {
	for _, seed := range []string{
		string(typicalCollector),
		`{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "BindingPolicy", "metadata": {"name": "p", "labels": {"a": 1}}, "spec": {"wantSingletonReportedState": true}}`,
		`{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "ContentClassifier", "metadata": {"name": ".."}, "spec": {"dontPropagatePointers": [[1]]}}`,
		`{"apiVersion": "policy.statusfold.dev/v1alpha1", "kind": "AggregationPolicy", "metadata": {"name": "x"}, "spec": null}`,
		`{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": null, "spec": [1]}`,
	} {
		f.Add([]byte(seed))
	}
	adm, err := offline.NewAdmission()
	if err != nil {
		f.Fatal(err)
	}
	c, err := check.New(check.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, ok := adm.Admit(context.Background(), "fuzz.json", body)
		if !ok {
			return
		}
		o.Check(context.Background(), c)
		if o.Err == nil && o.Typed == nil {
			t.Fatalf("neither an object nor an error for %q", body)
		}
		if o.Err != nil && offline.Message(o.Err) == "" {
			t.Fatalf("an error without a message for %q", body)
		}
	})
}

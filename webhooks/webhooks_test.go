package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/webhooks/check"
)

// TestManifestsMatchConfigurations keeps config/webhook/manifests.yaml in step with Configurations.
func TestManifestsMatchConfigurations(t *testing.T) {
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var gotV admissionregistrationv1.ValidatingWebhookConfiguration
	var gotM admissionregistrationv1.MutatingWebhookConfiguration
	if err := dec.Decode(&gotV); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&gotM); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		t.Fatalf("more than two documents: %v", err)
	}
	wantV, wantM := Configurations(ServiceClientConfig(DefaultNamespace, ServiceName))
	if diff := cmp.Diff(*wantV, gotV); diff != "" {
		t.Errorf("validating configuration (-Configurations +manifests.yaml):\n%s", diff)
	}
	if diff := cmp.Diff(*wantM, gotM); diff != "" {
		t.Errorf("mutating configuration (-Configurations +manifests.yaml):\n%s", diff)
	}
	for _, w := range gotV.Webhooks {
		if *w.FailurePolicy != admissionregistrationv1.Fail || *w.SideEffects != admissionregistrationv1.SideEffectClassNone || *w.TimeoutSeconds > 10 {
			t.Errorf("%s: failurePolicy %s, sideEffects %s, timeout %d", w.Name, *w.FailurePolicy, *w.SideEffects, *w.TimeoutSeconds)
		}
	}
}

func expr(s string) *controlv1alpha1.Expression { e := controlv1alpha1.Expression(s); return &e }

func TestStatusCollectorValidator(t *testing.T) {
	c, err := check.New(check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := NewStatusCollectorValidator(c)
	bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: controlv1alpha1.StatusCollectorSpec{
		CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "s", Type: controlv1alpha1.AggregatorTypeSum}}}}
	good := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "good"}, Spec: controlv1alpha1.StatusCollectorSpec{
		Filter: expr("false"), Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}}}}
	ctx := context.Background()

	_, err = v.ValidateCreate(ctx, bad)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create of a bad collector: %v, want Invalid", err)
	}
	wantMsg := `StatusCollector.control.kubestellar.io "bad" is invalid: spec.combinedFields[0].subject: Required value: SUM needs a subject`
	if err.Error() != wantMsg {
		t.Errorf("message\n got %s\nwant %s", err, wantMsg)
	}
	warnings, err := v.ValidateCreate(ctx, good)
	if err != nil || len(warnings) != 1 {
		t.Errorf("create of a good collector with a constant-false filter: %v, warnings %q", err, warnings)
	}
	// An invalid object that got in can still get metadata changes; a spec change is checked.
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	if _, err := v.ValidateUpdate(ctx, bad, relabelled); err != nil {
		t.Errorf("metadata-only update of an invalid object rejected: %v", err)
	}
	respec := bad.DeepCopy()
	respec.Spec.Limit = 3
	if _, err := v.ValidateUpdate(ctx, bad, respec); !apierrors.IsInvalid(err) {
		t.Errorf("spec update to an invalid spec: %v, want Invalid", err)
	}
	if _, err := v.ValidateDelete(ctx, bad); err != nil {
		t.Errorf("delete: %v", err)
	}
}

func TestStatusCollectorDefaulter(t *testing.T) {
	tests := []struct {
		limit, want int64
	}{{0, 20}, {1, 1}, {50, 50}}
	for _, tt := range tests {
		sc := &controlv1alpha1.StatusCollector{Spec: controlv1alpha1.StatusCollectorSpec{Limit: tt.limit}}
		if err := (StatusCollectorDefaulter{}).Default(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Limit != tt.want {
			t.Errorf("limit %d defaulted to %d, want %d", tt.limit, sc.Spec.Limit, tt.want)
		}
	}
}

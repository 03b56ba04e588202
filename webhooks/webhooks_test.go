package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	apischeme "github.com/statusfold/statusfold/api/scheme"
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

// TestStatusCollectorDefaulting checks the defaulting webhook's answers under /spec: a JSON patch
// for limit 0, nothing for a set limit, and an unchanged admission (no patch at all) for an
// object that does not decode into the Go type, which the apiserver's schema validation then
// rejects with the field's path. (The Go type also adds an empty /status, which the apiserver
// drops on create: the kind has a status subresource.)
func TestStatusCollectorDefaulting(t *testing.T) {
	wh := NewStatusCollectorDefaulting(apischeme.New())
	tests := []struct {
		name, object string
		wantPatches  []jsonpatch.JsonPatchOperation // under /spec
		unchanged    bool                           // no patch at all
	}{
		{"limit 0 becomes 20", `{"spec": {"limit": 0, "combinedFields": [{"name": "n", "type": "COUNT"}]}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "replace", Path: "/spec/limit", Value: json.Number("20")}}, false},
		{"a set limit stays", `{"spec": {"limit": 3, "combinedFields": [{"name": "n", "type": "COUNT"}]}}`, nil, false},
		{"a number where an expression belongs: left to the schema", `{"spec": {"limit": 0, "combinedFields": [{"name": "s", "type": "SUM", "subject": 5}]}}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := `{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "x"}, ` + tt.object[1:]
			resp := wh.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}})
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			if tt.unchanged && len(resp.Patches) > 0 {
				t.Fatalf("patched: %v", resp.Patches)
			}
			got := slices.DeleteFunc(slices.Clone(resp.Patches), func(op jsonpatch.JsonPatchOperation) bool { return !strings.HasPrefix(op.Path, "/spec/") })
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.wantPatches, got); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
		})
	}
}

package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	apischeme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/webhooks/check"
)

// review posts obj in an AdmissionReview (CREATE) straight to handler, as any pod that reaches
// the webhook port can, and returns the response.
func review(t *testing.T, handler http.Handler, obj client.Object) *admissionv1.AdmissionResponse {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Name: obj.GetName(),
			Object: runtimeRaw(raw)},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil {
		t.Fatal("no response")
	}
	return out.Response
}

func newChecker(t *testing.T) *check.Checker {
	t.Helper()
	c, err := check.New(check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func aggregationPolicy(name, rego string, examples int) *policyv1alpha1.AggregationPolicy {
	p := &policyv1alpha1.AggregationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.GroupVersion.String(), Kind: "AggregationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "example.io", Kind: "Widget"}, Rego: rego}}
	for i := range examples {
		p.Spec.Examples = append(p.Spec.Examples, policyv1alpha1.AggregationExample{Name: fmt.Sprintf("e%d", i),
			Object: runtimeRaw([]byte(`{"metadata":{"name":"w","generation":1}}`)),
			WECs:   []policyv1alpha1.ExampleWEC{{Name: "a", Status: ptrRaw(`{"n":1}`)}, {Name: "b", Status: ptrRaw(`{"n":1}`)}}, ExpectedStatus: ptrRaw(`{"n":1}`)})
	}
	return p
}

// TestLimitsCheckedAtThePort: AdmissionReviews sent straight to the handlers, with objects the
// CRD schema refuses, are denied with the schema's limit and the field's path, before anything
// is compiled (a Rego source or examples beyond the limits would otherwise be compiled and run).
func TestLimitsCheckedAtThePort(t *testing.T) {
	c := newChecker(t)
	scheme := apischeme.New()
	agg := admission.WithValidator[*policyv1alpha1.AggregationPolicy](scheme, NewAggregationPolicyValidator(c))
	coll := admission.WithValidator[*controlv1alpha1.StatusCollector](scheme, NewStatusCollectorValidator(c))
	const okRego = "package p\nstatus := {\"n\": 1}\n"
	long := strings.Repeat("x", MaxExpressionLength+1)
	tests := []struct {
		name    string
		handler http.Handler
		obj     client.Object
		want    string
	}{
		{"rego one character too long", agg,
			aggregationPolicy("bigrego", okRego+"# "+strings.Repeat("é", MaxRegoLength-len(okRego)-1), 1),
			"spec.rego: Too long: may not be more than 262144 characters"},
		{"65 examples", agg, aggregationPolicy("manyexamples", okRego, MaxExamples+1),
			"spec.examples: Too many: 65: must have at most 64 items"},
		{"example without WECs", agg, func() client.Object {
			p := aggregationPolicy("nowecs", okRego, 1)
			p.Spec.Examples[0].WECs = nil
			return p
		}(), "spec.examples[0].wecs: Required value"},
		{"collector filter too long", coll, &controlv1alpha1.StatusCollector{
			TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "StatusCollector"},
			ObjectMeta: metav1.ObjectMeta{Name: "longfilter"},
			Spec: controlv1alpha1.StatusCollectorSpec{Filter: expr(long),
				Select: []controlv1alpha1.NamedExpression{{Name: strings.Repeat("n", MaxColumnNameLength+1), Def: "1"}}}},
			"spec.select[0].name: Too long: may not be more than 253 characters"},
		{"collector negative limit", coll, &controlv1alpha1.StatusCollector{
			TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "StatusCollector"},
			ObjectMeta: metav1.ObjectMeta{Name: "neg"},
			Spec: controlv1alpha1.StatusCollectorSpec{Limit: -1,
				Select: []controlv1alpha1.NamedExpression{{Name: "n", Def: "1"}}}},
			"spec.limit: Invalid value: -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			resp := review(t, tt.handler, tt.obj)
			if resp.Allowed {
				t.Fatalf("allowed")
			}
			if msg := resp.Result.Message; !strings.Contains(msg, tt.want) {
				t.Errorf("message %.400q, want it to contain %q", msg, tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestSlowPolicyDeniedBeforeWebhookTimeout: a policy whose examples run until they are stopped
// (the engine's slow comprehension of TestAdmissionBounded) is denied with statusfold's message
// well within the webhook's timeout; with a handler deadline shorter than the engine's bound,
// the denial names the handler's.
func TestSlowPolicyDeniedBeforeWebhookTimeout(t *testing.T) {
	if CheckDeadline >= TimeoutSeconds*time.Second {
		t.Fatalf("CheckDeadline %s is not under the webhook timeout of %ds", CheckDeadline, TimeoutSeconds)
	}
	const slow = "package slow\nstatus := {\"n\": count([x | r := numbers.range(1, 1000); some i in r; some j in r; some k in r; x := 1])}\n"
	for _, tt := range []struct {
		deadline time.Duration
		want     string
	}{
		{0, "took more than 2s"},
		{300 * time.Millisecond, "the admission check took more than 300ms (the webhook's timeout is 10s)"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			v := NewAggregationPolicyValidator(newChecker(t))
			v.deadline = tt.deadline
			start := time.Now()
			resp := review(t, admission.WithValidator[*policyv1alpha1.AggregationPolicy](apischeme.New(), v),
				aggregationPolicy("slow", slow, 4))
			if d := time.Since(start); d > CheckDeadline {
				t.Errorf("took %s, want less than %s", d, CheckDeadline)
			}
			if resp.Allowed || !strings.Contains(resp.Result.Message, tt.want) {
				t.Errorf("allowed %v, message %q, want a denial containing %q", resp.Allowed, resp.Result.Message, tt.want)
			}
		})
	}
}

// TestSchemaLimitsMatchCRDs: every length and count limit that the CRD schemas declare under
// `spec` for the kinds the handlers check is one that limits.go checks, with the same value.
func TestSchemaLimitsMatchCRDs(t *testing.T) {
	checked := map[string]map[string]int64{
		"policy.statusfold.dev_aggregationpolicies.yaml": {
			"spec.rego maxLength": MaxRegoLength, "spec.rego minLength": 1, "spec.examples maxItems": MaxExamples,
			"spec.target.kind minLength": 1, "spec.examples[].name minLength": 1, "spec.examples[].wecs minItems": 1,
			"spec.examples[].wecs[].name minLength": 1},
		"control.kubestellar.io_statuscollectors.yaml": {
			"spec.filter maxLength": MaxExpressionLength, "spec.limit minimum": 1,
			"spec.groupBy[].def maxLength": MaxExpressionLength, "spec.select[].def maxLength": MaxExpressionLength,
			"spec.combinedFields[].subject maxLength": MaxExpressionLength,
			"spec.groupBy[].name maxLength":           MaxColumnNameLength, "spec.groupBy[].name minLength": 1,
			"spec.select[].name maxLength": MaxColumnNameLength, "spec.select[].name minLength": 1,
			"spec.combinedFields[].name maxLength": MaxColumnNameLength, "spec.combinedFields[].name minLength": 1},
		"control.kubestellar.io_contentclassifiers.yaml": {},
	}
	for file, want := range checked {
		data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", file))
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)["spec"].(map[string]any)
		collectLimits("spec", spec, got)
		var diff []string
		for k, v := range got {
			if w, ok := want[k]; !ok || w != v {
				diff = append(diff, fmt.Sprintf("%s = %d in the CRD, %d checked", k, v, w))
			}
		}
		slices.Sort(diff)
		for _, d := range diff {
			t.Errorf("%s: %s", file, d)
		}
	}
}

func collectLimits(path string, s map[string]any, into map[string]int64) {
	for _, k := range []string{"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minimum", "maximum"} {
		if v, ok := s[k]; ok {
			into[path+" "+k] = int64(v.(float64))
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			collectLimits(path+"."+name, p.(map[string]any), into)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		collectLimits(path+"[]", items, into)
	}
}

func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }

func ptrRaw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

package kinds

import (
	"context"
	"encoding/json"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// withoutConditions is a served StatusCollector schema without status.conditions, as KubeStellar's CRD.
const withoutConditions = `{"type":"object","properties":{"spec":{"type":"object"},
	"status":{"type":"object","properties":{"observedGeneration":{"type":"integer"},"errors":{"type":"array","items":{"type":"string"}}}}}}`

func schemaOf(t *testing.T, js string) *spec.Schema {
	t.Helper()
	s := &spec.Schema{}
	if err := json.Unmarshal([]byte(js), s); err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	validStatus2 = `{"kind":"StatusCollector","name":"sc","status":{"conditions":[{"message":"the spec passed validation",` +
		`"observedGeneration":2,"reason":"Valid","status":"True","type":"Valid"}],"observedGeneration":2}}`
	validStatus3 = `{"kind":"StatusCollector","name":"sc","status":{"conditions":[{"message":"the spec passed validation",` +
		`"observedGeneration":3,"reason":"Valid","status":"True","type":"Valid"}],"observedGeneration":3}}`
)

// TestStatusCollectorValidity: a StatusCollector's observedGeneration, errors and Valid condition
// are written when they differ from its status, once.
func TestStatusCollectorValidity(t *testing.T) {
	bad := field.ErrorList{field.Invalid(field.NewPath("spec", "select").Index(0).Child("def"), "x.", "syntax error")}
	msg := `spec.select[0].def: Invalid value: "x.": syntax error`
	cases := []struct {
		name     string
		obj      client.Object // nil: gone
		compiler fakeCompiler
		served   string
		want     []string
		events   []string
	}{
		{name: "valid, never reconciled: observedGeneration and Valid written",
			obj: collectorAt("sc", 2, controlv1alpha1.StatusCollectorStatus{}), want: []string{validStatus2}},
		{name: "valid and current: nothing written",
			obj: collectorAt("sc", 2, controlv1alpha1.StatusCollectorStatus{ObservedGeneration: 2, Conditions: validAt(2)})},
		{name: "new generation: written again",
			obj: collectorAt("sc", 3, controlv1alpha1.StatusCollectorStatus{ObservedGeneration: 2, Conditions: validAt(2)}), want: []string{validStatus3}},
		{name: "invalid: errors listed, condition False, an Event",
			obj: collectorAt("sc", 2, controlv1alpha1.StatusCollectorStatus{ObservedGeneration: 2, Conditions: validAt(2)}), compiler: fakeCompiler{"sc": bad},
			want: []string{`{"kind":"StatusCollector","name":"sc","status":{"conditions":[{"message":` + jsonString(msg) +
				`,"observedGeneration":2,"reason":"Invalid","status":"False","type":"Valid"}],"errors":[` + jsonString(msg) + `],"observedGeneration":2}}`},
			events: []string{"Warning InvalidSpec " + msg}},
		{name: "conditions not served, observedGeneration current: nothing written", served: withoutConditions,
			obj: collectorAt("sc", 2, controlv1alpha1.StatusCollectorStatus{ObservedGeneration: 2})},
		{name: "conditions not served, new generation: written without them", served: withoutConditions,
			obj:  collectorAt("sc", 3, controlv1alpha1.StatusCollectorStatus{ObservedGeneration: 2}),
			want: []string{`{"kind":"StatusCollector","name":"sc","status":{"observedGeneration":3}}`},
			events: []string{"Warning FieldsDropped written without fields that the served schema of StatusCollector.control.kubestellar.io " +
				"does not declare (reported once per kind and schema): .status.conditions"}},
		{name: "gone: nothing written"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var served *spec.Schema
			if tc.served != "" {
				served = schemaOf(t, tc.served)
			}
			var objs []client.Object
			if tc.obj != nil {
				objs = append(objs, tc.obj)
			}
			h := newHarness(served, tc.compiler, &fakeEngine{}, objs...)
			if err := h.r.Reconcile(context.Background(), rules.KindKey{Kind: rules.KindStatusCollector, Name: "sc"}); err != nil {
				t.Fatal(err)
			}
			if got := statusWrites(t, h.api); !equalOrBothEmpty(got, tc.want) {
				t.Errorf("writes\n got %q\nwant %q", got, tc.want)
			}
			if got := testutil.Recorded(h.rec); !equalOrBothEmpty(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAggregationPolicy: a valid AggregationPolicy is installed in the engine, an invalid one
// removed from it, a deleted one removed; each time the objects of its group are re-evaluated.
func TestAggregationPolicy(t *testing.T) {
	ap := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ap", Generation: 1},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "Deployment"}, Rego: "package x"}}
	bad := field.ErrorList{field.Invalid(field.NewPath("spec", "rego"), "package x", "no result rule")}
	msg := `spec.rego: Invalid value: "package x": no result rule`
	cases := []struct {
		name       string
		obj        client.Object
		refuse     map[string]field.ErrorList
		calls      []string
		reevaluate []string
		want       []string
		events     []string
	}{
		{name: "valid: installed, its group re-evaluated, Valid written", obj: ap,
			calls: []string{"set ap"}, reevaluate: []string{"apps all=false"},
			want: []string{`{"kind":"AggregationPolicy","name":"ap","status":{"conditions":[{"message":"the spec passed validation",` +
				`"observedGeneration":1,"reason":"Valid","status":"True","type":"Valid"},{"message":"the policy is in force for apps/Deployment",` +
				`"observedGeneration":1,"reason":"InForce","status":"True","type":"InForce"}],"observedGeneration":1}}`}},
		{name: "refused by the engine: removed, errors written, an Event", obj: ap, refuse: map[string]field.ErrorList{"ap": bad},
			calls: []string{"set ap", "remove ap"}, reevaluate: []string{"apps all=false"},
			want: []string{`{"kind":"AggregationPolicy","name":"ap","status":{"conditions":[{"message":` + jsonString(msg) +
				`,"observedGeneration":1,"reason":"Invalid","status":"False","type":"Valid"},{"message":"the policy is not valid (see the Valid condition): ` +
				`it aggregates nothing","observedGeneration":1,"reason":"Invalid","status":"False","type":"InForce"}],"errors":[` + jsonString(msg) + `],"observedGeneration":1}}`},
			events: []string{"Warning InvalidSpec " + msg}},
		{name: "gone: removed, every bound object re-evaluated", calls: []string{"remove ap"}, reevaluate: []string{" all=true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			if tc.obj != nil {
				objs = append(objs, tc.obj.DeepCopyObject().(client.Object))
			}
			h := newHarness(nil, nil, &fakeEngine{refuse: tc.refuse}, objs...)
			if err := h.r.Reconcile(context.Background(), rules.KindKey{Kind: rules.KindAggregationPolicy, Name: "ap"}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.engine.calls, tc.calls) {
				t.Errorf("engine: got %q, want %q", h.engine.calls, tc.calls)
			}
			if !slices.Equal(h.reevaluate, tc.reevaluate) {
				t.Errorf("re-evaluated: got %q, want %q", h.reevaluate, tc.reevaluate)
			}
			if got := statusWrites(t, h.api); !equalOrBothEmpty(got, tc.want) {
				t.Errorf("writes\n got %q\nwant %q", got, tc.want)
			}
			if got := testutil.Recorded(h.rec); !equalOrBothEmpty(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
		})
	}
}

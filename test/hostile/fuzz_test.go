package hostile

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
)

// FuzzCompileCollector puts an arbitrary expression in every expression position of a
// StatusCollector. Compiling never panics and reports errors under spec.; an accepted collector
// evaluates over reported statuses without a panic into results that encode as JSON.
func FuzzCompileCollector(f *testing.F) {
	for _, s := range []string{
		"returned.status.readyReplicas", "inventory.name", "true", "returned.status.conditions.exists(c, c.type == 'Ready')",
		"obj.spec.replicas - returned.status.?readyReplicas.orValue(0)", "[1, 2.0, 'x', null, {'a': b'\\xff'}]",
		"1.0 / 0.0", "duration('1h') + duration('1m')", "timestamp('2026-01-01T00:00:00Z')", "quantity('100m')",
		"returned.status.items.map(x, x * 2)", "inventory.labels['region']", "((((1))))", "'\u202e'", "9223372036854775807 + 1",
	} {
		f.Add(s, `{"readyReplicas": 2, "items": [1, 2], "conditions": [{"type": "Ready", "status": "True"}]}`)
	}
	c, err := collector.NewCompiler()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr, statusJSON string) {
		var status any
		if utiljson.Unmarshal([]byte(statusJSON), &status) != nil {
			status = nil
		}
		e := controlv1alpha1.Expression(expr)
		specs := []controlv1alpha1.StatusCollectorSpec{
			{Filter: &e, Select: []controlv1alpha1.NamedExpression{{Name: "w", Def: "inventory.name"}}},
			{Select: []controlv1alpha1.NamedExpression{{Name: "x", Def: e}}},
			{GroupBy: []controlv1alpha1.NamedExpression{{Name: "g", Def: e}}, CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
			{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "s", Type: controlv1alpha1.AggregatorTypeSum, Subject: &e}, {Name: "m", Type: controlv1alpha1.AggregatorTypeMax, Subject: &e}}},
		}
		for _, spec := range specs {
			sc := &controlv1alpha1.StatusCollector{Spec: spec}
			sc.Name = "fuzz"
			col, errs, _ := c.Compile(sc)
			for _, fe := range errs {
				if !strings.HasPrefix(fe.Field, "spec.") {
					t.Fatalf("error outside spec: %v", fe)
				}
			}
			if col == nil {
				continue
			}
			res := collector.Evaluate(map[string]any{"spec": map[string]any{"replicas": int64(3)}},
				[]collector.WEC{{Name: "a", Status: status}, {Name: "b"}}, []*collector.Collector{col})
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("results of %q do not encode: %v", expr, err)
			}
		}
	})
}

// FuzzBuiltinAggregation runs every built-in aggregation module over two arbitrary reported
// statuses: never a panic, and a result is either an error or a status that encodes as JSON.
func FuzzBuiltinAggregation(f *testing.F) {
	kinds := []schema.GroupKind{
		{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"},
		{Group: "apps", Kind: "ReplicaSet"}, {Group: "batch", Kind: "Job"}, {Kind: "Pod"}, {Kind: "PersistentVolumeClaim"},
		{Kind: "Service"}, {Group: "networking.k8s.io", Kind: "Ingress"}, {Group: "apiregistration.k8s.io", Kind: "APIService"},
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, {Group: "example.io", Kind: "Widget"},
	}
	for i := range kinds {
		f.Add(uint8(i), `{"replicas": 3, "readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}`,
			`{"replicas": "3", "readyReplicas": 1e308, "conditions": [{"type": "Available", "status": "Maybe"}], "phase": "Running"}`, int64(2))
	}
	eng, err := aggregation.NewEngine()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, s1, s2 string, gen int64) {
		var st1, st2 map[string]any
		if utiljson.Unmarshal([]byte(s1), &st1) != nil || utiljson.Unmarshal([]byte(s2), &st2) != nil {
			t.Skip()
		}
		gk := kinds[int(kind)%len(kinds)]
		obj := map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": gen}}
		details := &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: gen%2 == 0}
		for _, wecs := range [][]aggregation.WEC{
			{{Name: "a", Status: st1, Details: details}},
			{{Name: "a", Status: st1, Details: details}, {Name: "b", Status: st2}},
		} {
			out, err := eng.Returned(gk, obj, wecs)
			if err != nil {
				continue
			}
			if _, err := json.Marshal(out); err != nil {
				t.Fatalf("%s: result does not encode: %v", gk, err)
			}
		}
	})
}

package kinds

import (
	"context"
	"encoding/json"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/tools/events"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
)

// fakeCompiler finds the problems listed by collector name.
type fakeCompiler map[string]field.ErrorList

func (f fakeCompiler) Compile(sc *controlv1alpha1.StatusCollector) (*collector.Collector, field.ErrorList, []string) {
	return nil, f[sc.Name], nil
}

// fakeEngine records the AggregationPolicies installed and removed; it refuses those listed. Each
// policy it holds is in force (the real engine's choice among several is tested with it).
type fakeEngine struct {
	refuse  map[string]field.ErrorList
	calls   []string
	targets map[string]schema.GroupKind // the policies it holds
}

func (f *fakeEngine) SetPolicy(p *policyv1alpha1.AggregationPolicy) field.ErrorList {
	f.calls = append(f.calls, "set "+p.Name)
	if errs := f.refuse[p.Name]; len(errs) > 0 {
		return errs
	}
	if f.targets == nil {
		f.targets = map[string]schema.GroupKind{}
	}
	f.targets[p.Name] = schema.GroupKind{Group: p.Spec.Target.Group, Kind: p.Spec.Target.Kind}
	return nil
}

func (f *fakeEngine) RemovePolicy(name string) {
	f.calls = append(f.calls, "remove "+name)
	delete(f.targets, name)
}

func (f *fakeEngine) PolicyStanding(name string) (aggregation.Standing, bool) {
	gk, ok := f.targets[name]
	return aggregation.Standing{Name: name, Target: gk, InForce: name}, ok
}

func (f *fakeEngine) Superseded() int { return 0 }

// schemas resolves every kind to s, or reports no published schema when s is nil.
type schemas struct{ s *spec.Schema }

func (r schemas) ResolveSchema(schema.GroupVersionKind) (*spec.Schema, error) {
	if r.s == nil {
		return nil, resolver.ErrSchemaNotFound
	}
	return r.s, nil
}

// harness is a kinds reconciler over a fake WDS, with what it did.
type harness struct {
	r          *Reconciler
	api        *testutil.FakeAPI
	engine     *fakeEngine
	rec        *events.FakeRecorder
	reevaluate []string
}

func newHarness(served *spec.Schema, compiler fakeCompiler, engine *fakeEngine, objs ...client.Object) *harness {
	h := &harness{api: &testutil.FakeAPI{}, engine: engine, rec: events.NewFakeRecorder(16)}
	c := h.api.Client(objs...)
	m := metrics.New()
	w := writer.New(c, schemas{served}, report.NewThrottle(report.FailureWindow), m, nil, logr.Discard(), h.rec)
	h.r = New(Config{Cache: c, Compiler: compiler, Policies: engine, Writer: w, Metrics: m, Recorder: h.rec,
		Reevaluate: func(_ context.Context, group string, all bool) {
			h.reevaluate = append(h.reevaluate, group+" all="+map[bool]string{true: "true", false: "false"}[all])
		}})
	return h
}

// statusWrites is the status the writes carried, as JSON, each condition's lastTransitionTime
// (the time of the write) checked and removed; and each write's subresource and force.
func statusWrites(t *testing.T, api *testutil.FakeAPI) []string {
	t.Helper()
	var out []string
	for _, w := range api.Writes {
		if w.Sub != "status" || !w.Force || w.Manager != rules.FieldManager {
			t.Errorf("write %+v: want a forced apply of the status subresource by %s", w, rules.FieldManager)
		}
		status, _ := w.Obj.Object["status"].(map[string]any)
		conds, _ := status["conditions"].([]any)
		for _, c := range conds {
			c := c.(map[string]any)
			if c["lastTransitionTime"] == nil || c["lastTransitionTime"] == "" {
				t.Errorf("condition %v without lastTransitionTime", c)
			}
			delete(c, "lastTransitionTime")
		}
		b, err := json.Marshal(map[string]any{"kind": w.Obj.GetKind(), "name": w.Obj.GetName(), "status": status})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func collectorAt(name string, gen int64, status controlv1alpha1.StatusCollectorStatus) *controlv1alpha1.StatusCollector {
	return &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}, Status: status}
}

func validAt(gen int64) []metav1.Condition {
	return []metav1.Condition{{Type: controlv1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "the spec passed validation", ObservedGeneration: gen, LastTransitionTime: metav1.Now()}}
}

func equalOrBothEmpty(a, b []string) bool { return slices.Equal(a, b) || len(a)+len(b) == 0 }

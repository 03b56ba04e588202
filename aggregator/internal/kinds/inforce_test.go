package kinds

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
)

func deploymentPolicy(name string) *policyv1alpha1.AggregationPolicy {
	return &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name), Generation: 1},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "Deployment"},
			Rego: "package p\n\ncombine := {\"replicas\": \"sum\"}\n"}}
}

// TestAggregationPolicyInForce: with the real engine, of two valid policies for one kind the
// smaller name is InForce=True and the other False/Superseded naming it, with one Warning Event
// and the gauge at 1, even when the larger name is reconciled first; a change of either queues
// the other; when the one in force is deleted, the other is in force again.
func TestAggregationPolicyInForce(t *testing.T) {
	engine, err := aggregation.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	api, rec := &testutil.FakeAPI{}, events.NewFakeRecorder(16)
	c := api.Client(deploymentPolicy("deployments-default"), deploymentPolicy("deployments-strict"))
	m := metrics.New()
	var requeued []string
	r := New(Config{Cache: c, Policies: engine, Metrics: m, Recorder: rec,
		Writer:     writer.New(c, schemas{}, report.NewThrottle(report.FailureWindow), m, nil, logr.Discard(), rec),
		Reevaluate: func(context.Context, string, bool) {}, Requeue: func(name string) { requeued = append(requeued, name) }})
	update := func(mutate func(*policyv1alpha1.AggregationPolicy)) { updateNamed(t, c, "deployments-default", mutate) }
	superseded := `False Superseded policy "deployments-default" is in force for apps/Deployment: ` +
		`of several valid policies for one kind, the smallest name is`
	steps := []struct {
		name     string
		do       func()
		policy   string
		inForce  string // the InForce condition written ("": none)
		requeued []string
		events   []string
		gauge    float64
	}{
		{name: "the larger name first (after a start): the smaller one is judged before its standing is read: superseded, an Event",
			policy: "deployments-strict", inForce: superseded, requeued: []string{"deployments-default", "deployments-strict"},
			events: []string{"Warning Superseded " + superseded[len("False Superseded "):]}, gauge: 1},
		{name: "the smaller name: in force, already judged: nobody queued", policy: "deployments-default",
			inForce: "True InForce the policy is in force for apps/Deployment", gauge: 1},
		{name: "the larger name again, its status not yet read back: no second Event", policy: "deployments-strict", inForce: superseded, gauge: 1},
		{name: "the one in force becomes invalid: the other queued", policy: "deployments-default",
			inForce: "False Invalid the policy is not valid (see the Valid condition): it aggregates nothing", requeued: []string{"deployments-strict"},
			events: []string{`Warning InvalidSpec spec.rego: Invalid value: "(Rego source)": line 4:0: rego_parse_error: unexpected eof token`},
			do: func() {
				update(func(p *policyv1alpha1.AggregationPolicy) { p.Generation, p.Spec.Rego = 2, "package p\n\nstatus := {\n" })
			}},
		{name: "the other: in force", policy: "deployments-strict", inForce: "True InForce the policy is in force for apps/Deployment"},
		{name: "valid again: in force, the other queued", policy: "deployments-default", requeued: []string{"deployments-strict"}, gauge: 1,
			inForce: "True InForce the policy is in force for apps/Deployment",
			do: func() {
				update(func(p *policyv1alpha1.AggregationPolicy) {
					p.Generation, p.Spec.Rego = 3, deploymentPolicy("").Spec.Rego
				})
			}},
		{name: "the other superseded again: a new Event", policy: "deployments-strict", inForce: superseded,
			events: []string{"Warning Superseded " + superseded[len("False Superseded "):]}, gauge: 1},
		{name: "the one in force deleted: the other queued", policy: "deployments-default", requeued: []string{"deployments-strict"},
			do: func() {
				if err := c.Delete(context.Background(), deploymentPolicy("deployments-default")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the other: in force again", policy: "deployments-strict", inForce: "True InForce the policy is in force for apps/Deployment"},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		api.Writes, requeued = nil, nil
		if err := r.Reconcile(context.Background(), rules.KindKey{Kind: rules.KindAggregationPolicy, Name: st.policy}); err != nil {
			t.Fatal(err)
		}
		if got := writtenInForce(t, api); got != st.inForce {
			t.Errorf("%s: InForce written %q, want %q", st.name, got, st.inForce)
		}
		if !slices.Equal(requeued, st.requeued) {
			t.Errorf("%s: requeued %q, want %q", st.name, requeued, st.requeued)
		}
		if got := testutil.Recorded(rec); !equalOrBothEmpty(got, st.events) {
			t.Errorf("%s: events %q, want %q", st.name, got, st.events)
		}
		if got := promtest.ToFloat64(m.AggregationPoliciesSuperseded); got != st.gauge {
			t.Errorf("%s: statusfold_aggregation_policies_superseded %v, want %v", st.name, got, st.gauge)
		}
	}
}

// writtenInForce is the InForce condition of the last status write, as "status reason message".
func writtenInForce(t *testing.T, api *testutil.FakeAPI) string {
	t.Helper()
	if len(api.Writes) == 0 {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(api.Writes[len(api.Writes)-1].Obj.Object, "status", "conditions")
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == policyv1alpha1.ConditionInForce {
			return fmt.Sprintf("%v %v %v", c["status"], c["reason"], c["message"])
		}
	}
	return ""
}

// updateNamed updates the AggregationPolicy name in c with mutate.
func updateNamed(t *testing.T, c client.Client, name string, mutate func(*policyv1alpha1.AggregationPolicy)) {
	t.Helper()
	var cur policyv1alpha1.AggregationPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &cur); err != nil {
		t.Fatal(err)
	}
	mutate(&cur)
	if err := c.Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
}

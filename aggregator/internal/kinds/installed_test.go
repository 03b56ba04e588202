package kinds

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// TestAggregationPolicyJudgedOncePerSpec: reconciling an AggregationPolicy whose spec the engine
// already judged — its own status echo, a resync — compiles nothing and re-evaluates nothing; a new
// generation is given to the engine again, and so is the spec of a policy deleted and re-created
// under the same name.
func TestAggregationPolicyJudgedOncePerSpec(t *testing.T) {
	ap := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ap", UID: "u1", Generation: 1},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "Deployment"}, Rego: "package x"}}
	h := newHarness(nil, nil, &fakeEngine{}, ap.DeepCopy())
	ctx, key := context.Background(), rules.KindKey{Kind: rules.KindAggregationPolicy, Name: "ap"}
	reconcile := func(what string, wantCalls, wantReevaluate []string) {
		t.Helper()
		h.engine.calls, h.reevaluate = nil, nil
		if err := h.r.Reconcile(ctx, key); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.engine.calls, wantCalls) || !slices.Equal(h.reevaluate, wantReevaluate) {
			t.Errorf("%s: engine %q, re-evaluated %q; want %q and %q", what, h.engine.calls, h.reevaluate, wantCalls, wantReevaluate)
		}
	}
	reconcile("first", []string{"set ap"}, []string{"apps all=false"})
	reconcile("the same spec again (its status echo)", nil, nil)

	update := func(mutate func(*policyv1alpha1.AggregationPolicy)) {
		t.Helper()
		var cur policyv1alpha1.AggregationPolicy
		c := h.r.cache.(client.Client)
		if err := c.Get(ctx, client.ObjectKey{Name: "ap"}, &cur); err != nil {
			t.Fatal(err)
		}
		mutate(&cur)
		if err := c.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	}
	update(func(p *policyv1alpha1.AggregationPolicy) { p.Generation = 2 })
	reconcile("a new generation", []string{"set ap"}, []string{"apps all=false"})
	update(func(p *policyv1alpha1.AggregationPolicy) { p.UID = "u2" })
	reconcile("re-created under the same name", []string{"set ap"}, []string{"apps all=false"})
}

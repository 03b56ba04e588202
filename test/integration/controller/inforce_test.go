package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// supersededBy is the InForce message of a policy superseded by the named one for apps/Deployment.
func supersededBy(name string) string {
	return fmt.Sprintf("policy %q is in force for apps/Deployment: of several valid policies for one kind, the smallest name is", name)
}

func targetPolicy(name, group, kind, rego string) *policyv1alpha1.AggregationPolicy {
	return &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: group, Kind: kind}, Rego: rego}}
}

// TestAggregationPolicyInForce: of two valid AggregationPolicies for one kind, the smaller name is
// InForce=True and the other InForce=False/Superseded naming it, with a Warning Event and the
// IN-FORCE column of kubectl (VALID beside it); an invalid smaller name takes nothing over; when the one in force
// moves to another kind, becomes invalid or is deleted, the next one is in force (docs/aggregation.md "Which
// policy is in force").
func TestAggregationPolicyInForce(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	startManager(t, cp, aggregator.Options{})
	const rego = "package p\n\ncombine := {\"replicas\": \"sum\"}\n"
	create(t, c, targetPolicy("deployments-strict", "apps", "Deployment", rego),
		targetPolicy("deployments-default", "apps", "Deployment", rego),
		targetPolicy("deployments-broken", "apps", "Deployment", "package p\n\nstatus := {\n"))
	expectInForce(t, c, map[string]string{"deployments-default": "True InForce",
		"deployments-strict": "False Superseded " + supersededBy("deployments-default"), "deployments-broken": "False Invalid"})
	expectEvent(t, c, "", "deployments-strict", "Superseded", supersededBy("deployments-default"))
	expectColumn(t, cp, "IN-FORCE", map[string]string{"deployments-default": "True", "deployments-strict": "False", "deployments-broken": "False"})
	expectColumn(t, cp, "VALID", map[string]string{"deployments-default": "True", "deployments-strict": "True", "deployments-broken": "False"})

	// A smaller name for the kind, then moved to another kind: the others follow.
	create(t, c, targetPolicy("deployments-aaa", "apps", "Deployment", rego))
	expectInForce(t, c, map[string]string{"deployments-aaa": "True InForce",
		"deployments-default": "False Superseded " + supersededBy("deployments-aaa"),
		"deployments-strict":  "False Superseded " + supersededBy("deployments-aaa")})
	updateAggregationPolicy(t, c, "deployments-aaa", func(p *policyv1alpha1.AggregationPolicy) {
		p.Spec.Target = policyv1alpha1.TargetKind{Group: "apps", Kind: "StatefulSet"}
	})
	expectInForce(t, c, map[string]string{"deployments-aaa": "True InForce", "deployments-default": "True InForce",
		"deployments-strict": "False Superseded " + supersededBy("deployments-default")})

	// The one in force becomes invalid, then valid again.
	updateAggregationPolicy(t, c, "deployments-default", func(p *policyv1alpha1.AggregationPolicy) { p.Spec.Rego = "package p\n\nstatus := {\n" })
	expectInForce(t, c, map[string]string{"deployments-default": "False Invalid", "deployments-strict": "True InForce"})
	updateAggregationPolicy(t, c, "deployments-default", func(p *policyv1alpha1.AggregationPolicy) { p.Spec.Rego = rego })
	expectInForce(t, c, map[string]string{"deployments-default": "True InForce",
		"deployments-strict": "False Superseded " + supersededBy("deployments-default")})

	// The one in force deleted: the other is in force.
	if err := c.Delete(context.Background(), targetPolicy("deployments-default", "", "", "")); err != nil {
		t.Fatal(err)
	}
	expectInForce(t, c, map[string]string{"deployments-strict": "True InForce", "deployments-broken": "False Invalid"})
}

// updateAggregationPolicy updates the named AggregationPolicy with mutate, again on a conflict with
// the controller's status write.
func updateAggregationPolicy(t *testing.T, c client.Client, name string, mutate func(*policyv1alpha1.AggregationPolicy)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ap policyv1alpha1.AggregationPolicy
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &ap); err != nil {
			return err
		}
		mutate(&ap)
		return c.Update(context.Background(), &ap)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expectInForce waits until each named AggregationPolicy's InForce condition, as "status reason
// message", starts with the text given, at the policy's generation.
func expectInForce(t *testing.T, c client.Client, want map[string]string) {
	t.Helper()
	eventually(t, fmt.Sprintf("InForce conditions %v", want), func() error {
		for name, w := range want {
			var ap policyv1alpha1.AggregationPolicy
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &ap); err != nil {
				return err
			}
			cond := findCondition(ap.Status.Conditions, policyv1alpha1.ConditionInForce)
			if cond == nil {
				return fmt.Errorf("%s: no InForce condition: %+v", name, ap.Status)
			}
			got := fmt.Sprintf("%s %s %s", cond.Status, cond.Reason, cond.Message)
			if !strings.HasPrefix(got, w) || cond.ObservedGeneration != ap.Generation {
				return fmt.Errorf("%s: InForce %q (generation %d of %d), want %q", name, got, cond.ObservedGeneration, ap.Generation, w)
			}
		}
		return nil
	})
}

// expectColumn checks the column of `kubectl get aggregationpolicies` for the named policies.
func expectColumn(t *testing.T, cp *framework.ControlPlane, column string, want map[string]string) {
	t.Helper()
	out, stderr, err := cp.Kubectl(context.Background(), nil, "get", "aggregationpolicies")
	if err != nil {
		t.Fatalf("kubectl: %v: %s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	at := strings.Index(lines[0], column)
	if at < 0 {
		t.Fatalf("no column %s in:\n%s", column, out)
	}
	got := map[string]string{}
	for _, l := range lines[1:] {
		if name := strings.Fields(l)[0]; want[name] != "" && len(l) > at {
			got[name] = strings.Fields(l[at:])[0]
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s of %s: %q, want %q in:\n%s", column, name, got[name], w, out)
		}
	}
}

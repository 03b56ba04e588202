package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

type policyOpt func(*controlv1alpha1.BindingPolicy)

// policy builds a BindingPolicy selecting the clusters named (by their "name" label).
func policy(name string, clusters []string, opts ...policyOpt) *controlv1alpha1.BindingPolicy {
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "name", Operator: metav1.LabelSelectorOpIn, Values: clusters}}}}
	for _, o := range opts {
		o(bp)
	}
	return bp
}

// clause adds a downsync clause for objects of group/resource in ns named names.
func clause(group, resource, ns string, names []string, mods ...func(*controlv1alpha1.DownsyncPolicyClause)) policyOpt {
	return func(bp *controlv1alpha1.BindingPolicy) {
		c := controlv1alpha1.DownsyncPolicyClause{}
		c.APIGroup = &group
		c.Resources = []string{resource}
		if ns != "" {
			c.Namespaces = []string{ns}
		}
		c.ObjectNames = names
		for _, m := range mods {
			m(&c)
		}
		bp.Spec.Downsync = append(bp.Spec.Downsync, c)
	}
}

func singleton(c *controlv1alpha1.DownsyncPolicyClause) { c.WantSingletonReportedState = true }

func multi(c *controlv1alpha1.DownsyncPolicyClause) { c.WantMultiWECReportedState = true }

func collectors(names ...string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.StatusCollectors = names }
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// updatePolicy re-reads the policy, applies mutate and updates it.
func updatePolicy(t *testing.T, c client.Client, name string, mutate func(*controlv1alpha1.BindingPolicy)) {
	t.Helper()
	var bp controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bp); err != nil {
		t.Fatal(err)
	}
	mutate(&bp)
	if err := c.Update(context.Background(), &bp); err != nil {
		t.Fatal(err)
	}
}

func expr(s string) *controlv1alpha1.Expression { e := controlv1alpha1.Expression(s); return &e }

// combinedStatus reads the CombinedStatus of (obj, policy) from the apiserver.
func combinedStatus(c client.Client, obj client.Object, policyName, ns string) (*controlv1alpha1.CombinedStatus, error) {
	var bp controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: policyName}, &bp); err != nil {
		return nil, err
	}
	var cs controlv1alpha1.CombinedStatus
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: string(obj.GetUID()) + "." + string(bp.UID)}, &cs)
	return &cs, err
}

// result returns the named result of cs.
func result(cs *controlv1alpha1.CombinedStatus, name string) (*controlv1alpha1.NamedStatusCombination, error) {
	for i := range cs.Results {
		if cs.Results[i].Name == name {
			return &cs.Results[i], nil
		}
	}
	return nil, fmt.Errorf("no result %q in %s (has %d results)", name, cs.Name, len(cs.Results))
}

// cells renders a result's rows as strings (numbers as their decimal text, strings as is, null
// as "null"), for compact expectations.
func cells(r *controlv1alpha1.NamedStatusCombination) [][]string {
	var out [][]string
	for _, row := range r.Rows {
		var cols []string
		for _, v := range row.Columns {
			switch {
			case v.String != nil:
				cols = append(cols, *v.String)
			case v.Number != nil:
				cols = append(cols, *v.Number)
			case v.Bool != nil:
				cols = append(cols, fmt.Sprint(*v.Bool))
			case v.Type == controlv1alpha1.TypeNull:
				cols = append(cols, "null")
			case v.Object != nil:
				cols = append(cols, string(v.Object.Raw))
			case v.Array != nil:
				cols = append(cols, string(v.Array.Raw))
			default:
				b, _ := json.Marshal(v)
				cols = append(cols, string(b))
			}
		}
		out = append(out, cols)
	}
	return out
}

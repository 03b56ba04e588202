package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// condition returns the StatusCollectorsAvailable condition of a policy and of its binding.
func collectorConditions(c client.Client, name string) (bp, b *controlv1alpha1.BindingPolicyCondition, err error) {
	var p controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
		return nil, nil, err
	}
	var bd controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bd); err != nil {
		return nil, nil, err
	}
	find := func(cs []controlv1alpha1.BindingPolicyCondition) *controlv1alpha1.BindingPolicyCondition {
		for i := range cs {
			if cs[i].Type == controlv1alpha1.ConditionStatusCollectorsAvailable {
				return &cs[i]
			}
		}
		return nil
	}
	return find(p.Status.Conditions), find(bd.Status.Conditions), nil
}

func expectCollectorsCondition(t *testing.T, c client.Client, name string, status corev1.ConditionStatus, msgPart string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s StatusCollectorsAvailable=%s %q", name, status, msgPart), func() error {
		bp, b, err := collectorConditions(c, name)
		if err != nil {
			return err
		}
		for what, cond := range map[string]*controlv1alpha1.BindingPolicyCondition{"BindingPolicy": bp, "Binding": b} {
			if cond == nil {
				return fmt.Errorf("%s has no condition", what)
			}
			if cond.Status != status || !strings.Contains(cond.Message, msgPart) {
				return fmt.Errorf("%s condition %s %q", what, cond.Status, cond.Message)
			}
		}
		return nil
	})
}

// testCollectorLifecycle: a missing collector, then created; an invalid one reported in its
// status; a spec change of a valid one.
func testCollectorLifecycle(t *testing.T, c client.Client) {
	ns := "lifecycle"
	d := deployment(t, c, ns, "web", 3, nil)
	invalid := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: controlv1alpha1.StatusCollectorSpec{ // select and combinedFields are exclusive
			Select:         []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}},
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}}}
	create(t, c, invalid)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("late", "broken"))))
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "missing: late")
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "invalid: broken")
	eventually(t, "invalid collector reports its errors", func() error {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(context.Background(), client.ObjectKey{Name: "broken"}, &sc); err != nil {
			return err
		}
		if sc.Status.ObservedGeneration != sc.Generation || len(sc.Status.Errors) == 0 {
			return fmt.Errorf("status %+v", sc.Status)
		}
		if cond := findCondition(sc.Status.Conditions, controlv1alpha1.ConditionValid); cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("Valid condition %+v", cond)
		}
		return nil
	})
	eventually(t, "CombinedStatus with no valid collector has no results", func() error {
		cs, err := combinedStatus(c, d, ns, ns)
		if err != nil {
			return err
		}
		if len(cs.Results) != 0 {
			return fmt.Errorf("results %v", resultNames(cs))
		}
		return nil
	})
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	late := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}}}
	create(t, c, late)
	expectResult(t, c, d, ns, ns, "late", [][]string{{"1"}})
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "invalid: broken")
	// Fix the broken collector and change the late one.
	var sc controlv1alpha1.StatusCollector
	if err := c.Get(context.Background(), client.ObjectKey{Name: "broken"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.CombinedFields = nil
	if err := c.Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	expectCollectorsCondition(t, c, ns, corev1.ConditionTrue, "")
	expectResult(t, c, d, ns, ns, "broken", [][]string{{"wec1"}})
	if err := c.Get(context.Background(), client.ObjectKey{Name: "late"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.CombinedFields = []controlv1alpha1.NamedAggregator{{Name: "total", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.readyReplicas")}}
	if err := c.Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	cs := expectResult(t, c, d, ns, ns, "late", [][]string{{"3"}})
	if r, _ := result(cs, "late"); !slices.Equal(r.ColumnNames, []string{"total"}) {
		t.Errorf("columns %v after the spec change, want [total]", r.ColumnNames)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// testAggregationPolicy: a valid AggregationPolicy replaces the kind's module in the manager; an
// invalid one is reported in its status and ignored.
func testAggregationPolicy(t *testing.T, c client.Client) {
	ns := "aggpol"
	rs := replicaSet(t, c, ns, "rs", 2)
	create(t, c, policy(ns, []string{"wec1", "wec2"}, clause("apps", "replicasets", ns, nil, multi)))
	ref := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "rs"}
	for _, w := range []string{"wec1", "wec2"} {
		report(t, c, w, ref, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1}, applied(1))
	}
	replicasOf := func() (int64, error) {
		u, err := getObject(c, rs, ns, "rs")
		if err != nil {
			return 0, err
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return n, nil
	}
	eventually(t, "built-in aggregate", func() error {
		if n, err := replicasOf(); err != nil || n != 2 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
	valid := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "replicasets-fixed"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "ReplicaSet"},
			Rego: "package statusfold.user.replicasets\n\nstatus := {\"replicas\": 42}\n"}}
	invalid := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken-rego"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "StatefulSet"},
			Rego: "package statusfold.user.broken\n\nstatus := {\n"}}
	create(t, c, valid, invalid)
	eventually(t, "the user module's aggregate", func() error {
		if n, err := replicasOf(); err != nil || n != 42 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
	eventually(t, "AggregationPolicy validity in status", func() error {
		for name, want := range map[string]metav1.ConditionStatus{"replicasets-fixed": metav1.ConditionTrue, "broken-rego": metav1.ConditionFalse} {
			var ap policyv1alpha1.AggregationPolicy
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &ap); err != nil {
				return err
			}
			cond := findCondition(ap.Status.Conditions, controlv1alpha1.ConditionValid)
			if cond == nil || cond.Status != want || ap.Status.ObservedGeneration != ap.Generation {
				return fmt.Errorf("%s: status %+v", name, ap.Status)
			}
			if want == metav1.ConditionFalse && (len(ap.Status.Errors) == 0 || !strings.Contains(ap.Status.Errors[0], "spec.rego")) {
				return fmt.Errorf("%s: errors %v", name, ap.Status.Errors)
			}
		}
		return nil
	})
	if err := c.Delete(context.Background(), valid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "built-in aggregate again", func() error {
		if n, err := replicasOf(); err != nil || n != 2 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
}

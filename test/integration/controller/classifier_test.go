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
)

// testPruning: a ContentClassifier's dontPropagatePointers under status remove those parts from
// the CombinedStatus and the copied status; an invalid classifier reports its errors.
func testPruning(t *testing.T, c client.Client) {
	ns := "pruning"
	rs := replicaSet(t, c, ns, "rs", 2)
	cc := &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "replicasets.v1.apps"},
		Spec: controlv1alpha1.ContentClassifierSpec{DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "fullyLabeledReplicas"}}}}
	bad := &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "pods.v1"},
		Spec: controlv1alpha1.ContentClassifierSpec{DesiredStatePointers: []controlv1alpha1.JSONPointer{{"status", "phase"}}}}
	create(t, c, cc, bad)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "replicasets", ns, nil, singleton, collectors("full-status"))))
	ref := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "rs"}
	report(t, c, "wec1", ref, map[string]any{"replicas": 2, "readyReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1}, applied(1))
	expectResult(t, c, rs, ns, ns, "full-status", [][]string{{"wec1", jsonCell(t, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1})}})
	eventually(t, "copied status without the pruned field", func() error {
		u, err := getObject(c, rs, ns, "rs")
		if err != nil {
			return err
		}
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		if _, ok := st["fullyLabeledReplicas"]; ok || st["readyReplicas"] != int64(2) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	eventually(t, "invalid ContentClassifier reports its errors", func() error {
		var got controlv1alpha1.ContentClassifier
		if err := c.Get(context.Background(), client.ObjectKey{Name: "pods.v1"}, &got); err != nil {
			return err
		}
		cond := findCondition(got.Status.Conditions, controlv1alpha1.ConditionValid)
		if got.Status.ObservedGeneration != got.Generation || len(got.Status.Errors) != 1 || cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("status %+v", got.Status)
		}
		if !strings.Contains(got.Status.Errors[0], "spec.desiredStatePointers[0]") {
			return fmt.Errorf("error %q does not name the field", got.Status.Errors[0])
		}
		return nil
	})
	// Removing the classifier brings the field back.
	if err := c.Delete(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	expectResult(t, c, rs, ns, ns, "full-status", [][]string{{"wec1", jsonCell(t, map[string]any{"replicas": 2, "readyReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1})}})
}

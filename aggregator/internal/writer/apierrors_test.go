package writer

import (
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestConflictFieldsAndRemoval(t *testing.T) {
	err := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other"`, Field: ".status.readyReplicas"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other"`, Field: `.status.conditions[type="Available"].status`},
	}, "conflicts")
	fields := ConflictFields(fmt.Errorf("apply: %w", err))
	want := []string{".status.readyReplicas", `.status.conditions[type="Available"].status`}
	if !slices.Equal(fields, want) {
		t.Fatalf("conflictFields = %v, want %v", fields, want)
	}
	obj := map[string]any{"status": map[string]any{"readyReplicas": int64(1), "replicas": int64(3), "conditions": []any{}}}
	if !RemoveFields(obj, fields) {
		t.Fatal("removeFields removed nothing")
	}
	wantObj := map[string]any{"status": map[string]any{"replicas": int64(3)}}
	if !equality.Semantic.DeepEqual(obj, wantObj) {
		t.Errorf("after removal %v, want %v", obj, wantObj)
	}
	if RemoveFields(obj, []string{".status", ".status.absent"}) {
		t.Error("removeFields reported removing the whole status or an absent field")
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "pi", field.ErrorList{
		field.Invalid(field.NewPath("status", "completionTime"), "2026-11-26T01:24:51Z", "cannot set completionTime when there is no Complete=True condition"),
		field.Invalid(field.NewPath("metadata", "labels"), "x", "never dropped"),
	})
	if got := InvalidStatusFields(fmt.Errorf("apply: %w", invalid)); !slices.Equal(got, []string{"status.completionTime"}) {
		t.Errorf("invalidStatusFields = %v, want [status.completionTime]", got)
	}
}

func TestRemoveFieldsDottedKeys(t *testing.T) {
	obj := map[string]any{"status": map[string]any{
		"byHost": map[string]any{"node-1.example.com": map[string]any{"ready": true}, "node-2": int64(1)},
		"a.b":    map[string]any{"c": int64(1), "d": int64(2)},
	}}
	if !RemoveFields(obj, []string{".status.byHost.node-1.example.com.ready", ".status.a.b.c"}) {
		t.Fatal("removeFields removed nothing")
	}
	want := map[string]any{"status": map[string]any{
		"byHost": map[string]any{"node-1.example.com": map[string]any{}, "node-2": int64(1)},
		"a.b":    map[string]any{"d": int64(2)},
	}}
	if !equality.Semantic.DeepEqual(obj, want) {
		t.Errorf("after removal %v, want %v", obj, want)
	}
	if RemoveFields(obj, []string{".status.byHost.node-1.example", ".status.a"}) {
		t.Error("removeFields removed a field that is not in the object")
	}
}

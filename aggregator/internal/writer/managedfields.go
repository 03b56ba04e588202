package writer

import (
	"bytes"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// Reading managedFields: what statusfold's field manager (FieldManager) owns in an object, read
// with structured-merge-diff's field sets, the apiserver's own form of a FieldsV1 entry.

// Owned returns the fields that FieldManager's server-side apply entry for the subresource ("" for
// the main resource) owns; an empty set when it has none (or the entry cannot be read).
func Owned(obj *unstructured.Unstructured, subresource string) *fieldpath.Set {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != rules.FieldManager || mf.Subresource != subresource || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			continue
		}
		return s
	}
	return &fieldpath.Set{}
}

// Owns reports whether the field set s holds the field at the path of field names (e.g.
// "metadata", "labels", "app"), or a field under it.
func Owns(s *fieldpath.Set, fields ...string) bool {
	path := make([]any, len(fields))
	for i, f := range fields {
		path[i] = f
	}
	if s.Has(fieldpath.MakePathOrDie(path...)) {
		return true
	}
	for _, f := range fields {
		s = s.WithPrefix(fieldpath.PathElement{FieldName: &f})
	}
	return !s.Empty()
}

// AppliedBy reports whether the object has a server-side apply entry of the field manager:
// a return of "nothing" would then remove something.
func AppliedBy(obj *unstructured.Unstructured, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply
	})
}

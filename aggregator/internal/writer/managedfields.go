package writer

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// Reading managedFields: what statusfold's field manager (FieldManager) owns in an object.

// OwnsField reports whether FieldManager's managed-fields entry for the subresource ("" for the
// main resource) contains the field path (FieldsV1 keys such as "f:status").
func OwnsField(obj *unstructured.Unstructured, subresource string, path ...string) bool {
	return OwnedAt(obj, subresource, path...) != nil
}

// OwnedAt returns the FieldsV1 set at the field path in FieldManager's managed-fields entry for
// the subresource, or nil when that entry does not contain the path.
func OwnedAt(obj *unstructured.Unstructured, subresource string, path ...string) map[string]any {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != rules.FieldManager || mf.Subresource != subresource || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		cur := fields
		for _, p := range path {
			next, ok := cur[p].(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = next
		}
		if cur != nil {
			return cur
		}
	}
	return nil
}

// AppliedBy reports whether the object has a server-side apply entry of the field manager:
// a return of "nothing" would then remove something.
func AppliedBy(obj *unstructured.Unstructured, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply
	})
}

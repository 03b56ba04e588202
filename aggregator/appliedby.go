package aggregator

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appliedBy reports whether the object has a server-side apply entry of the field manager:
// a return of "nothing" would then remove something.
func appliedBy(obj *unstructured.Unstructured, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply
	})
}

package inputs

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statusfold/statusfold/policy/objview"
)

// ObjectView tracks the workload object as the engines see it (policy/objview).
type ObjectView struct {
	rv   string
	view map[string]any
}

// Update returns the view of obj and whether it differs from the previous one: a write that
// changed only the object's status is no change.
func (o *ObjectView) Update(obj *unstructured.Unstructured) (map[string]any, bool) {
	if o.view != nil && obj.GetResourceVersion() == o.rv {
		return o.view, false
	}
	v := objview.Of(obj.Object)
	o.rv = obj.GetResourceVersion()
	if o.view != nil && equality.Semantic.DeepEqual(v, o.view) {
		return o.view, false
	}
	o.view = v
	return v, true
}

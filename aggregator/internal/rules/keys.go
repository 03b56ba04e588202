package rules

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// CombinedStatusObject is the workload object a CombinedStatus is about, read from its labels,
// and whether it has them.
func CombinedStatusObject(o metav1.Object) (ObjectKey, bool) {
	l := o.GetLabels()
	name, ok := l[controlv1alpha1.LabelCombinedStatusName]
	if !ok {
		return ObjectKey{}, false
	}
	return ObjectKey{Group: l[controlv1alpha1.LabelCombinedStatusAPIGroup], Resource: l[controlv1alpha1.LabelCombinedStatusResource],
		Namespace: l[controlv1alpha1.LabelCombinedStatusNamespace], Name: name}, true
}

// BindingCollectors lists the StatusCollectors that a Binding's objects name, each once.
func BindingCollectors(spec *controlv1alpha1.BindingSpec) []string {
	var out []string
	seen := map[string]bool{}
	for _, bo := range BoundObjects(spec) {
		for _, c := range bo.Modulation.StatusCollectors {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// UnionSorted returns the union of two sorted sets; it may return x or y itself.
func UnionSorted(x, y []string) []string {
	if len(x) == 0 {
		return y
	}
	if len(y) == 0 {
		return x
	}
	out := make([]string, 0, max(len(x), len(y)))
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case j == len(y) || (i < len(x) && x[i] < y[j]):
			out = append(out, x[i])
			i++
		case i == len(x) || y[j] < x[i]:
			out = append(out, y[j])
			j++
		default:
			out = append(out, x[i])
			i++
			j++
		}
	}
	return out
}

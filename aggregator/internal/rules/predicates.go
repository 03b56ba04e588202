package rules

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// ChangedBound lists the objects whose evaluation a Binding change can affect: all of them when
// the destinations changed (or the Binding appeared or went), else those added, removed, or with
// another modulation. A new resourceVersion alone changes nothing (the object's own event covers
// it), so a status write does not fan out to every object of the Binding.
func ChangedBound(o, n *controlv1alpha1.Binding) []ObjectKey {
	if o == nil || n == nil || !slices.Equal(o.Spec.Destinations, n.Spec.Destinations) {
		var keys []ObjectKey
		for _, b := range []*controlv1alpha1.Binding{o, n} {
			if b != nil {
				for _, bo := range BoundObjects(&b.Spec) {
					keys = append(keys, bo.Key())
				}
			}
		}
		return keys
	}
	type entry struct {
		version string
		mod     controlv1alpha1.DownsyncModulation
	}
	index := func(b *controlv1alpha1.Binding) map[ObjectKey]entry {
		m := map[ObjectKey]entry{}
		for _, bo := range BoundObjects(&b.Spec) {
			m[bo.Key()] = entry{bo.GVR.Version, bo.Modulation}
		}
		return m
	}
	oi, ni := index(o), index(n)
	var keys []ObjectKey
	for k, oe := range oi {
		ne, ok := ni[k]
		if !ok || ne.version != oe.version || !equality.Semantic.DeepEqual(ne.mod, oe.mod) {
			keys = append(keys, k)
		}
	}
	for k := range ni {
		if _, ok := oi[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// OnlyReturnLabelsChanged reports whether labels o and n differ, if at all, only in ReturnLabels.
func OnlyReturnLabelsChanged(o, n map[string]string) bool {
	differs := func(a, b map[string]string) bool {
		for k, v := range a {
			if w, ok := b[k]; (!ok || w != v) && !slices.Contains(ReturnLabels, k) {
				return true
			}
		}
		return false
	}
	return !differs(o, n) && !differs(n, o)
}

// SelectorsName reports whether a label selector of sels names one of keys.
func SelectorsName(sels []metav1.LabelSelector, keys []string) bool {
	for _, sel := range sels {
		for k := range sel.MatchLabels {
			if slices.Contains(keys, k) {
				return true
			}
		}
		for _, e := range sel.MatchExpressions {
			if slices.Contains(keys, e.Key) {
				return true
			}
		}
	}
	return false
}

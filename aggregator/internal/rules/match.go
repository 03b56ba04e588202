package rules

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Matching, shared by the controller and `statusfold status` (pure: no client, no cache): which
// workload object a Binding entry or a WorkStatus is about, where a Binding sends an object, and
// which WorkStatus counts when a mailbox holds several for one object.

// ObjectKey identifies a workload object independently of the API version it is read through.
type ObjectKey struct {
	Group     string
	Resource  string
	Namespace string // empty for cluster-scoped objects
	Name      string
}

// String is the key's index form: group/resource/namespace/name.
func (k ObjectKey) String() string {
	return k.Group + "/" + k.Resource + "/" + k.Namespace + "/" + k.Name
}

// GroupResource of the object.
func (k ObjectKey) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Resource}
}

// BoundObject is one object of a Binding, with its combined modulation and the resourceVersion
// the Binding lists.
type BoundObject struct {
	GVR             schema.GroupVersionResource
	Namespace       string
	Name            string
	Modulation      controlv1alpha1.DownsyncModulation
	ResourceVersion string
}

// Key of the object.
func (b BoundObject) Key() ObjectKey {
	return ObjectKey{Group: b.GVR.Group, Resource: b.GVR.Resource, Namespace: b.Namespace, Name: b.Name}
}

// BoundObjects lists the objects of a Binding.
func BoundObjects(spec *controlv1alpha1.BindingSpec) []BoundObject {
	out := make([]BoundObject, 0, len(spec.Workload.NamespaceScope)+len(spec.Workload.ClusterScope))
	for _, c := range spec.Workload.NamespaceScope {
		out = append(out, BoundObject{
			GVR:       schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource},
			Namespace: c.Namespace, Name: c.Name, Modulation: c.DownsyncModulation, ResourceVersion: c.ResourceVersion})
	}
	for _, c := range spec.Workload.ClusterScope {
		out = append(out, BoundObject{
			GVR:  schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource},
			Name: c.Name, Modulation: c.DownsyncModulation, ResourceVersion: c.ResourceVersion})
	}
	return out
}

// BoundIn returns the object's entry in a Binding, and whether the Binding lists the object.
func BoundIn(spec *controlv1alpha1.BindingSpec, key ObjectKey) (BoundObject, bool) {
	for _, bo := range BoundObjects(spec) {
		if bo.Key() == key {
			return bo, true
		}
	}
	return BoundObject{}, false
}

// Destinations are the WECs a Binding sends its objects to: sorted, each once.
func Destinations(spec *controlv1alpha1.BindingSpec) []string {
	d := make([]string, 0, len(spec.Destinations))
	for _, dest := range spec.Destinations {
		d = append(d, dest.ClusterId)
	}
	slices.Sort(d)
	return slices.Compact(d)
}

// WorkStatusObject is the workload object a WorkStatus reports on (by group, resource,
// namespace and name, as the controller matches them; `statusfold status` does the same).
func WorkStatusObject(ws *controlv1alpha1.WorkStatus) ObjectKey {
	r := ws.Spec.SourceRef
	return ObjectKey{Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}
}

// NewestWorkStatus returns the WorkStatus that counts among several that report one object from
// one WEC (its mailbox namespace): the newest by creation, and of those created at the same
// time the last by name; nil for none.
func NewestWorkStatus(list []*controlv1alpha1.WorkStatus) *controlv1alpha1.WorkStatus {
	var best *controlv1alpha1.WorkStatus
	for _, ws := range list {
		if best == nil || ws.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(ws.CreationTimestamp.Equal(&best.CreationTimestamp) && ws.Name > best.Name) {
			best = ws
		}
	}
	return best
}

package rules

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// InventoryCluster is one inventory object (an OCM ManagedCluster): a WEC's name and labels.
type InventoryCluster struct {
	Name   string
	Labels map[string]string
}

// WorkloadObject is what binding resolution needs to know about one workload object.
type WorkloadObject struct {
	GVR             schema.GroupVersionResource
	Namespaced      bool
	Namespace       string
	Name            string
	ResourceVersion string
	Labels          map[string]string
}

// Key of the object.
func (o WorkloadObject) Key() ObjectKey {
	return ObjectKey{Group: o.GVR.Group, Resource: o.GVR.Resource, Namespace: o.Namespace, Name: o.Name}
}

// matchAll reports whether a list of names accepts everything: empty, or containing "*".
func matchAll(list []string) bool { return len(list) == 0 || slices.Contains(list, "*") }

// ClauseWantsResource reports whether a downsync clause can match objects of the resource gr;
// binding resolution watches exactly the resources that some clause wants.
func ClauseWantsResource(t *controlv1alpha1.DownsyncObjectTest, gr schema.GroupResource) bool {
	if t.APIGroup != nil && *t.APIGroup != gr.Group {
		return false
	}
	return matchAll(t.Resources) || slices.Contains(t.Resources, gr.Resource)
}

// ClauseNamespaces returns the namespaces outside which a downsync clause that wants a
// namespaced resource matches none of its objects: those it names (all false), or every
// namespace (all true) when it names none or "*". A clause that selects namespaces by label
// only (namespaceSelectors) can match in any namespace, now or after a namespace's labels
// change: all is true (docs/security.md, "Reads").
func ClauseNamespaces(t *controlv1alpha1.DownsyncObjectTest) (namespaces []string, all bool) {
	if matchAll(t.Namespaces) {
		return nil, true
	}
	return t.Namespaces, false
}

// selectorsMatch reports whether any of sels matches set. Invalid selectors match nothing and
// are reported as field errors at fldPath.
func selectorsMatch(sels []metav1.LabelSelector, set map[string]string, fldPath *field.Path) (bool, field.ErrorList) {
	var errs field.ErrorList
	for i := range sels {
		sel, err := metav1.LabelSelectorAsSelector(&sels[i])
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Index(i), sels[i], err.Error()))
			continue
		}
		if sel.Matches(labels.Set(set)) {
			return true, errs
		}
	}
	return false, errs
}

// matchClause reports whether obj satisfies every criterion of a downsync clause (docs/rules.md "Bindings").
// nsLabels are the labels of the object's Namespace (nil for a cluster-scoped object or an
// unknown namespace).
func matchClause(t *controlv1alpha1.DownsyncObjectTest, obj *WorkloadObject, nsLabels map[string]string, fldPath *field.Path) (bool, field.ErrorList) {
	if !ClauseWantsResource(t, obj.GVR.GroupResource()) {
		return false, nil
	}
	if !matchAll(t.ObjectNames) && !slices.Contains(t.ObjectNames, obj.Name) {
		return false, nil
	}
	if obj.Namespaced {
		if !matchAll(t.Namespaces) && !slices.Contains(t.Namespaces, obj.Namespace) {
			return false, nil
		}
	} else if len(t.Namespaces) > 0 && !slices.Contains(t.Namespaces, "*") {
		// "*" is the only way a namespaces list matches a cluster-scoped object.
		return false, nil
	}
	var errs field.ErrorList
	if len(t.NamespaceSelectors) > 0 {
		if obj.Namespaced {
			ok, e := selectorsMatch(t.NamespaceSelectors, nsLabels, fldPath.Child("namespaceSelectors"))
			errs = append(errs, e...)
			if !ok {
				return false, errs
			}
		} else if !slices.ContainsFunc(t.NamespaceSelectors, isEmptySelector) {
			// A cluster-scoped object passes only an empty selector.
			return false, nil
		}
	}
	if len(t.ObjectSelectors) > 0 {
		ok, e := selectorsMatch(t.ObjectSelectors, obj.Labels, fldPath.Child("objectSelectors"))
		errs = append(errs, e...)
		if !ok {
			return false, errs
		}
	}
	return true, errs
}

func isEmptySelector(s metav1.LabelSelector) bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// selectClusters returns the sorted names of the inventory clusters that match any of the policy's
// cluster selectors (an empty list selects none).
func selectClusters(sels []metav1.LabelSelector, clusters []InventoryCluster) ([]string, field.ErrorList) {
	var names []string
	var errs field.ErrorList
	fldPath := field.NewPath("spec", "clusterSelectors")
	for _, c := range clusters {
		ok, e := selectorsMatch(sels, c.Labels, fldPath)
		if len(errs) == 0 {
			errs = e // the same errors for every cluster: keep one copy
		}
		if ok {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), errs
}

// ResolveBinding computes the spec of the Binding of policy bp (docs/rules.md "Bindings"): every object that matches
// at least one clause, with the modulations of the matching clauses combined (booleans ORed,
// collector names unioned and sorted), and the selected clusters as destinations. Problems in the
// policy (invalid selectors) are returned as field errors; the rest of the policy still applies.
func ResolveBinding(bp *controlv1alpha1.BindingPolicy, clusters []InventoryCluster, objects []WorkloadObject,
	nsLabels func(namespace string) map[string]string) (controlv1alpha1.BindingSpec, field.ErrorList) {
	var spec controlv1alpha1.BindingSpec
	dests, errs := selectClusters(bp.Spec.ClusterSelectors, clusters)
	for _, d := range dests {
		spec.Destinations = append(spec.Destinations, controlv1alpha1.Destination{ClusterId: d})
	}
	seenErr := map[string]bool{}
	for i := range objects {
		obj := &objects[i]
		var mod controlv1alpha1.DownsyncModulation
		matched := false
		for j := range bp.Spec.Downsync {
			clause := &bp.Spec.Downsync[j]
			var ns map[string]string
			if obj.Namespaced && nsLabels != nil {
				ns = nsLabels(obj.Namespace)
			}
			ok, e := matchClause(&clause.DownsyncObjectTest, obj, ns, field.NewPath("spec", "downsync").Index(j))
			for _, err := range e {
				if !seenErr[err.Error()] {
					seenErr[err.Error()] = true
					errs = append(errs, err)
				}
			}
			if !ok {
				continue
			}
			matched = true
			mod = combineModulation(mod, clause.DownsyncModulation)
		}
		if !matched {
			continue
		}
		gvr := metav1.GroupVersionResource{Group: obj.GVR.Group, Version: obj.GVR.Version, Resource: obj.GVR.Resource}
		if obj.Namespaced {
			spec.Workload.NamespaceScope = append(spec.Workload.NamespaceScope, controlv1alpha1.NamespaceScopeDownsyncClause{
				NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
					GroupVersionResource: gvr, Namespace: obj.Namespace, Name: obj.Name, ResourceVersion: obj.ResourceVersion},
				DownsyncModulation: mod,
			})
		} else {
			spec.Workload.ClusterScope = append(spec.Workload.ClusterScope, controlv1alpha1.ClusterScopeDownsyncClause{
				ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
					GroupVersionResource: gvr, Name: obj.Name, ResourceVersion: obj.ResourceVersion},
				DownsyncModulation: mod,
			})
		}
	}
	sortWorkload(&spec)
	return spec, errs
}

// sortWorkload puts a Binding's objects in their order: by group, resource, namespace, name.
func sortWorkload(spec *controlv1alpha1.BindingSpec) {
	slices.SortFunc(spec.Workload.NamespaceScope, func(a, b controlv1alpha1.NamespaceScopeDownsyncClause) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(spec.Workload.ClusterScope, func(a, b controlv1alpha1.ClusterScopeDownsyncClause) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Name, b.Name))
	})
}

// KeepBound adds to spec the objects that cur (the Binding as written) lists for the resources in
// unknown, unchanged: resources whose objects cannot be listed now keep their last known entries.
func KeepBound(spec, cur *controlv1alpha1.BindingSpec, unknown map[schema.GroupResource]bool) {
	if len(unknown) == 0 {
		return
	}
	KeepBoundWhere(spec, cur, func(gr schema.GroupResource, _ string) bool { return unknown[gr] })
}

// KeepBoundWhere adds to spec the objects that cur lists whose resource and namespace ("" for a
// cluster-scoped object) keep reports, unchanged: KeepBound of single namespaces.
func KeepBoundWhere(spec, cur *controlv1alpha1.BindingSpec, keep func(gr schema.GroupResource, namespace string) bool) {
	if cur == nil {
		return
	}
	for _, c := range cur.Workload.NamespaceScope {
		if keep(schema.GroupResource{Group: c.Group, Resource: c.Resource}, c.Namespace) {
			spec.Workload.NamespaceScope = append(spec.Workload.NamespaceScope, c)
		}
	}
	for _, c := range cur.Workload.ClusterScope {
		if keep(schema.GroupResource{Group: c.Group, Resource: c.Resource}, "") {
			spec.Workload.ClusterScope = append(spec.Workload.ClusterScope, c)
		}
	}
	sortWorkload(spec)
}

// UncertainResources returns the resources of the objects cur (the Binding as written) lists
// that belong to a group in groups (its discovery fails), that known does not report (the catalog
// has never seen them: e.g. at start, or after a leader change, while the group is down) and that
// some clause of bp can select. Their objects may exist: KeepBound keeps their entries rather
// than dropping them as absent. A resource no clause can select any more is not kept: its entries
// go whatever discovery says.
func UncertainResources(bp *controlv1alpha1.BindingPolicy, cur *controlv1alpha1.BindingSpec, groups []string,
	known func(schema.GroupResource) bool) map[schema.GroupResource]bool {
	if cur == nil || len(groups) == 0 {
		return nil
	}
	var out map[schema.GroupResource]bool
	add := func(gr schema.GroupResource) {
		if out[gr] || !slices.Contains(groups, gr.Group) || known(gr) {
			return
		}
		if !slices.ContainsFunc(bp.Spec.Downsync, func(c controlv1alpha1.DownsyncPolicyClause) bool {
			return ClauseWantsResource(&c.DownsyncObjectTest, gr)
		}) {
			return
		}
		if out == nil {
			out = map[schema.GroupResource]bool{}
		}
		out[gr] = true
	}
	for _, c := range cur.Workload.NamespaceScope {
		add(schema.GroupResource{Group: c.Group, Resource: c.Resource})
	}
	for _, c := range cur.Workload.ClusterScope {
		add(schema.GroupResource{Group: c.Group, Resource: c.Resource})
	}
	return out
}

// combineModulation ORs the booleans and unions (sorted) the collector names.
func combineModulation(a, b controlv1alpha1.DownsyncModulation) controlv1alpha1.DownsyncModulation {
	out := controlv1alpha1.DownsyncModulation{
		CreateOnly:                 a.CreateOnly || b.CreateOnly,
		WantSingletonReportedState: a.WantSingletonReportedState || b.WantSingletonReportedState,
		WantMultiWECReportedState:  a.WantMultiWECReportedState || b.WantMultiWECReportedState,
	}
	if n := len(a.StatusCollectors) + len(b.StatusCollectors); n > 0 {
		out.StatusCollectors = make([]string, 0, n)
		out.StatusCollectors = append(append(out.StatusCollectors, a.StatusCollectors...), b.StatusCollectors...)
		slices.Sort(out.StatusCollectors)
		out.StatusCollectors = slices.Compact(out.StatusCollectors)
	}
	return out
}

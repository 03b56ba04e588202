package rules

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestKeepUncertainGroups: the entries a Binding has for the resources of a group whose discovery
// fails, and that the catalog does not know (never seen: a start while the group is down), are
// kept as they were — matched by the entry's group — when resolution finds none of their
// objects; entries of other groups, of a known resource of that group, and of resources no
// clause can select any more follow resolution.
func TestKeepUncertainGroups(t *testing.T) {
	nsEntry := func(group, resource, name string) controlv1alpha1.NamespaceScopeDownsyncClause {
		return controlv1alpha1.NamespaceScopeDownsyncClause{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Group: group, Version: "v1", Resource: resource}, Namespace: "ns", Name: name, ResourceVersion: "7"},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"c"}}}
	}
	cur := &controlv1alpha1.BindingSpec{}
	cur.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{
		nsEntry("", "configmaps", "gone"),            // its group answers: resolution decides
		nsEntry("front.example.com", "things", "t1"), // never seen, group down: kept
		nsEntry("front.example.com", "known", "k1"),  // known to the catalog: resolution (and KeepBound on a failed watch) decides
		nsEntry("other.example.com", "widgets", "w1"),
	}
	cur.Workload.ClusterScope = []controlv1alpha1.ClusterScopeDownsyncClause{{ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
		GroupVersionResource: metav1.GroupVersionResource{Group: "front.example.com", Version: "v1", Resource: "clusterthings"}, Name: "ct1"}}}
	bp := &controlv1alpha1.BindingPolicy{}
	bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{
		{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: group("front.example.com"), Resources: []string{"*"}}},
		{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"configmaps"}}},
	}
	known := func(gr schema.GroupResource) bool { return gr.Resource == "known" || gr.Group == "" }
	groups := []string{"front.example.com", "other.example.com"}

	keep := UncertainResources(bp, cur, groups, known)
	want := map[schema.GroupResource]bool{{Group: "front.example.com", Resource: "things"}: true, {Group: "front.example.com", Resource: "clusterthings"}: true}
	if len(keep) != len(want) {
		t.Fatalf("UncertainResources = %v, want %v (other.example.com: no clause selects it)", keep, want)
	}
	for gr := range want {
		if !keep[gr] {
			t.Errorf("UncertainResources = %v: %v missing", keep, gr)
		}
	}

	// Resolution found only a new ConfigMap: the uncertain entries are added back unchanged.
	spec := controlv1alpha1.BindingSpec{}
	spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{nsEntry("", "configmaps", "new")}
	KeepBound(&spec, cur, keep)
	var names []string
	for _, e := range spec.Workload.NamespaceScope {
		names = append(names, e.Name)
	}
	if len(names) != 2 || names[0] != "new" || names[1] != "t1" || spec.Workload.NamespaceScope[1].ResourceVersion != "7" {
		t.Errorf("namespace-scoped entries %v, want [new t1] with t1 as it was", names)
	}
	if len(spec.Workload.ClusterScope) != 1 || spec.Workload.ClusterScope[0].Name != "ct1" {
		t.Errorf("cluster-scoped entries %+v, want ct1 kept", spec.Workload.ClusterScope)
	}

	if got := UncertainResources(bp, cur, nil, known); got != nil {
		t.Errorf("UncertainResources without uncertain groups = %v, want none", got)
	}
	if got := UncertainResources(bp, nil, groups, known); got != nil {
		t.Errorf("UncertainResources without a Binding = %v, want none", got)
	}
}

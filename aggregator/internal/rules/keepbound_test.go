package rules

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestKeepBoundWhere: the entries of a resource in the namespaces that may not be read are kept
// as they were; those of the namespaces that were resolved, and of other resources, follow
// resolution.
func TestKeepBoundWhere(t *testing.T) {
	entry := func(resource, ns, name string) controlv1alpha1.NamespaceScopeDownsyncClause {
		return controlv1alpha1.NamespaceScopeDownsyncClause{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Version: "v1", Resource: resource}, Namespace: ns, Name: name}}
	}
	cur := &controlv1alpha1.BindingSpec{}
	cur.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{
		entry("configmaps", "a", "a1"), entry("configmaps", "b", "b1"), entry("services", "b", "s1")}
	spec := controlv1alpha1.BindingSpec{}
	spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{entry("configmaps", "a", "a2")}
	KeepBoundWhere(&spec, cur, func(gr schema.GroupResource, ns string) bool {
		return gr == schema.GroupResource{Resource: "configmaps"} && ns == "b"
	})
	var got []string
	for _, e := range spec.Workload.NamespaceScope {
		got = append(got, e.Resource+"/"+e.Namespace+"/"+e.Name)
	}
	if want := []string{"configmaps/a/a2", "configmaps/b/b1"}; !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
}

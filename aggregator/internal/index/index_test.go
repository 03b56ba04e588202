package index

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestBindingNames: the index lists each bound object's namespace/name once, whatever its
// resource, so an object is found under every resource that a Binding lists it by.
func TestBindingNames(t *testing.T) {
	b := &controlv1alpha1.Binding{Spec: controlv1alpha1.BindingSpec{Workload: controlv1alpha1.DownsyncObjectClauses{
		NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{
			{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: metav1.GroupVersionResource{Group: "front.example.com", Version: "v1", Resource: "things"}, Namespace: "ns", Name: "t1"}},
			{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: metav1.GroupVersionResource{Group: "backend.example.com", Version: "v1", Resource: "things"}, Namespace: "ns", Name: "t1"}},
			{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "ns", Name: "d"}},
		},
	}}}
	got := bindingNames(b)
	want := []string{"ns/t1", "ns/d"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("bindingNames = %v, want %v", got, want)
	}
}

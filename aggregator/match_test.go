package aggregator

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func TestNewestWorkStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	ws := func(name string, created time.Duration) *controlv1alpha1.WorkStatus {
		return &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "wec1", Name: name,
			CreationTimestamp: metav1.NewTime(t0.Add(created))}}
	}
	older, newer := ws("b", 0), ws("a", time.Second)
	sameTimeA, sameTimeB := ws("a", 0), ws("b", 0)
	cases := []struct {
		name string
		list []*controlv1alpha1.WorkStatus
		want *controlv1alpha1.WorkStatus
	}{
		{"none", nil, nil},
		{"one", []*controlv1alpha1.WorkStatus{older}, older},
		{"newest by creation, whatever the order", []*controlv1alpha1.WorkStatus{newer, older}, newer},
		{"newest by creation, other order", []*controlv1alpha1.WorkStatus{older, newer}, newer},
		{"same creation: last by name", []*controlv1alpha1.WorkStatus{sameTimeB, sameTimeA}, sameTimeB},
		{"same creation: last by name, other order", []*controlv1alpha1.WorkStatus{sameTimeA, sameTimeB}, sameTimeB},
	}
	for _, tc := range cases {
		if got := NewestWorkStatus(tc.list); got != tc.want {
			t.Errorf("%s: NewestWorkStatus = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBoundInAndDestinations(t *testing.T) {
	var spec controlv1alpha1.BindingSpec
	spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{{
		NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "ns", Name: "web"},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true},
	}}
	spec.Workload.ClusterScope = []controlv1alpha1.ClusterScopeDownsyncClause{{
		ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Name: "r"},
	}}
	spec.Destinations = []controlv1alpha1.Destination{{ClusterId: "wec2"}, {ClusterId: "wec1"}, {ClusterId: "wec2"}}
	cases := []struct {
		key      ObjectKey
		want     bool
		wantMod  bool
		wantName string
	}{
		{ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}, true, true, "web"},
		{ObjectKey{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "r"}, true, false, "r"},
		{ObjectKey{Group: "apps", Resource: "deployments", Namespace: "other", Name: "web"}, false, false, ""},
		{ObjectKey{Group: "", Resource: "deployments", Namespace: "ns", Name: "web"}, false, false, ""},
	}
	for _, tc := range cases {
		bo, ok := BoundIn(&spec, tc.key)
		if ok != tc.want || bo.Name != tc.wantName || bo.Modulation.WantSingletonReportedState != tc.wantMod {
			t.Errorf("BoundIn(%s) = %+v, %v; want name %q, singleton %v, %v", tc.key, bo, ok, tc.wantName, tc.wantMod, tc.want)
		}
	}
	if got, want := Destinations(&spec), []string{"wec1", "wec2"}; !slices.Equal(got, want) {
		t.Errorf("Destinations = %v, want %v", got, want)
	}
}

package rules

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

func TestOnlyReturnLabelsChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		o, n map[string]string
		want bool
	}{
		{"equal", map[string]string{"app": "web"}, map[string]string{"app": "web"}, true},
		{"both empty", nil, map[string]string{}, true},
		{"executing count changed", map[string]string{"app": "web", LabelExecutingCount: "1"},
			map[string]string{"app": "web", LabelExecutingCount: "2"}, true},
		{"return labels added", map[string]string{"app": "web"},
			map[string]string{"app": "web", LabelExecutingCount: "1", LabelSingletonStatus: "true"}, true},
		{"return labels removed", map[string]string{LabelExecutingCount: "1", LabelMultiWECStatus: "true"}, nil, true},
		{"a user's label changed too", map[string]string{"app": "web", LabelExecutingCount: "1"},
			map[string]string{"app": "api", LabelExecutingCount: "2"}, false},
		{"a user's label added", map[string]string{LabelExecutingCount: "1"},
			map[string]string{LabelExecutingCount: "1", "tier": "front"}, false},
		{"a user's label removed", map[string]string{"tier": "front"}, map[string]string{}, false},
	} {
		if got := OnlyReturnLabelsChanged(tc.o, tc.n); got != tc.want {
			t.Errorf("%s: onlyReturnLabelsChanged(%v, %v) = %v, want %v", tc.name, tc.o, tc.n, got, tc.want)
		}
	}
}

func TestSelectorsName(t *testing.T) {
	keys := ReturnLabels
	for _, tc := range []struct {
		name string
		sels []metav1.LabelSelector
		want bool
	}{
		{"none", nil, false},
		{"other labels", []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}, false},
		{"matchLabels names the executing count", []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}},
			{MatchLabels: map[string]string{LabelExecutingCount: "2"}}}, true},
		{"matchExpressions names the singleton label", []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: LabelSingletonStatus, Operator: metav1.LabelSelectorOpDoesNotExist}}}}, true},
	} {
		if got := SelectorsName(tc.sels, keys); got != tc.want {
			t.Errorf("%s: selectorsName = %v, want %v", tc.name, got, tc.want)
		}
	}
}

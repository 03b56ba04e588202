package rules

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

var (
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterroles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

type objOpt func(*WorkloadObject)

func obj(gvr schema.GroupVersionResource, ns, name string, opts ...objOpt) WorkloadObject {
	o := WorkloadObject{GVR: gvr, Namespaced: ns != "", Namespace: ns, Name: name, ResourceVersion: "7"}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func withLabels(l map[string]string) objOpt { return func(o *WorkloadObject) { o.Labels = l } }

func group(g string) *string { return &g }

func TestMatchClause(t *testing.T) {
	nsLabels := map[string]string{"team": "a"}
	cases := []struct {
		name string
		test controlv1alpha1.DownsyncObjectTest
		obj  WorkloadObject
		want bool
	}{
		{"resources * alone matches a namespaced object", controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}}, obj(deployments, "ns", "d"), true},
		{"resources * alone matches a cluster-scoped object", controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}}, obj(clusterroles, "", "r"), true},
		{"apiGroup must equal", controlv1alpha1.DownsyncObjectTest{APIGroup: group("apps")}, obj(configmaps, "ns", "c"), false},
		{"empty apiGroup is the core group", controlv1alpha1.DownsyncObjectTest{APIGroup: group("")}, obj(configmaps, "ns", "c"), true},
		{"resource listed", controlv1alpha1.DownsyncObjectTest{Resources: []string{"configmaps", "deployments"}}, obj(deployments, "ns", "d"), true},
		{"resource not listed", controlv1alpha1.DownsyncObjectTest{Resources: []string{"configmaps"}}, obj(deployments, "ns", "d"), false},
		{"namespace listed", controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"ns"}}, obj(deployments, "ns", "d"), true},
		{"namespace not listed", controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"other"}}, obj(deployments, "ns", "d"), false},
		{"a namespace list does not match a cluster-scoped object", controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"ns"}}, obj(clusterroles, "", "r"), false},
		{"namespaces * matches a cluster-scoped object", controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}}, obj(clusterroles, "", "r"), true},
		{"object name", controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"d"}}, obj(deployments, "ns", "d"), true},
		{"other object name", controlv1alpha1.DownsyncObjectTest{ObjectNames: []string{"e"}}, obj(deployments, "ns", "d"), false},
		{"object selector matches", controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "x"}}}},
			obj(deployments, "ns", "d", withLabels(map[string]string{"app": "x"})), true},
		{"object selector does not match", controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "y"}}}},
			obj(deployments, "ns", "d", withLabels(map[string]string{"app": "x"})), false},
		{"namespace selector matches the namespace's labels", controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}},
			obj(deployments, "ns", "d"), true},
		{"namespace selector does not match", controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "b"}}}},
			obj(deployments, "ns", "d"), false},
		{"cluster-scoped object needs an empty namespace selector", controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}},
			obj(clusterroles, "", "r"), false},
		{"cluster-scoped object passes an empty namespace selector", controlv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{}}},
			obj(clusterroles, "", "r"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ns map[string]string
			if tc.obj.Namespaced {
				ns = nsLabels
			}
			got, errs := matchClause(&tc.test, &tc.obj, ns, nil)
			if len(errs) > 0 {
				t.Fatalf("errors %v", errs)
			}
			if got != tc.want {
				t.Errorf("matchClause = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResolveBinding(t *testing.T) {
	clusters := []InventoryCluster{
		{Name: "c2", Labels: map[string]string{"env": "prod"}},
		{Name: "c1", Labels: map[string]string{"env": "prod"}},
		{Name: "c3", Labels: map[string]string{"env": "dev"}},
	}
	objects := []WorkloadObject{
		obj(deployments, "ns", "web", withLabels(map[string]string{"app": "web"})),
		obj(deployments, "ns", "api"),
		obj(configmaps, "ns", "cfg"),
		obj(clusterroles, "", "role"),
	}
	bp := &controlv1alpha1.BindingPolicy{}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "prod"}}}
	bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{
		{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: group("apps"), Resources: []string{"deployments"}},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"b", "a"}, WantSingletonReportedState: true}},
		{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "c"}, WantMultiWECReportedState: true, CreateOnly: true}},
		{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}, Resources: []string{"clusterroles"}}},
	}

	got, errs := ResolveBinding(bp, clusters, objects, func(string) map[string]string { return nil })
	if len(errs) > 0 {
		t.Fatalf("errors %v", errs)
	}
	gv := func(gvr schema.GroupVersionResource) metav1.GroupVersionResource {
		return metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	}
	want := controlv1alpha1.BindingSpec{
		Destinations: []controlv1alpha1.Destination{{ClusterId: "c1"}, {ClusterId: "c2"}},
		Workload: controlv1alpha1.DownsyncObjectClauses{
			NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{
				{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: gv(deployments), Namespace: "ns", Name: "api", ResourceVersion: "7"},
					DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "b"}, WantSingletonReportedState: true}},
				{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: gv(deployments), Namespace: "ns", Name: "web", ResourceVersion: "7"},
					DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "b", "c"}, WantSingletonReportedState: true,
						WantMultiWECReportedState: true, CreateOnly: true}},
			},
			ClusterScope: []controlv1alpha1.ClusterScopeDownsyncClause{
				{ClusterScopeDownsyncObject: controlv1alpha1.ClusterScopeDownsyncObject{GroupVersionResource: gv(clusterroles), Name: "role", ResourceVersion: "7"}},
			},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("ResolveBinding:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveBindingEdges(t *testing.T) {
	clusters := []InventoryCluster{{Name: "c1", Labels: map[string]string{"env": "prod"}}}
	objects := []WorkloadObject{obj(deployments, "ns", "web")}
	t.Run("no cluster selectors select no cluster", func(t *testing.T) {
		bp := &controlv1alpha1.BindingPolicy{}
		bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}}}}
		got, _ := ResolveBinding(bp, clusters, objects, nil)
		if len(got.Destinations) != 0 || len(got.Workload.NamespaceScope) != 1 {
			t.Errorf("got %+v, want no destinations and the one object", got)
		}
	})
	t.Run("an invalid selector is an error with its path and matches nothing", func(t *testing.T) {
		bp := &controlv1alpha1.BindingPolicy{}
		bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}}
		got, errs := ResolveBinding(bp, clusters, objects, nil)
		if len(got.Destinations) != 0 || len(errs) != 1 || errs[0].Field != "spec.clusterSelectors[0]" {
			t.Errorf("got %+v, errors %v; want no destinations and one error at spec.clusterSelectors[0]", got, errs)
		}
	})
}

func TestCombineModulation(t *testing.T) {
	got := combineModulation(
		controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"z", "a"}, CreateOnly: true},
		controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "m"}, WantSingletonReportedState: true})
	want := controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"a", "m", "z"}, CreateOnly: true, WantSingletonReportedState: true}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestChangedBound(t *testing.T) {
	entry := func(name, rv string, collectors ...string) controlv1alpha1.NamespaceScopeDownsyncClause {
		c := controlv1alpha1.NamespaceScopeDownsyncClause{}
		c.Group, c.Version, c.Resource, c.Namespace, c.Name, c.ResourceVersion = "apps", "v1", "deployments", "ns", name, rv
		c.StatusCollectors = collectors
		return c
	}
	binding := func(dests []string, entries ...controlv1alpha1.NamespaceScopeDownsyncClause) *controlv1alpha1.Binding {
		b := &controlv1alpha1.Binding{}
		for _, d := range dests {
			b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterId: d})
		}
		b.Spec.Workload.NamespaceScope = entries
		return b
	}
	key := func(name string) ObjectKey {
		return ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: name}
	}
	cases := []struct {
		name string
		o, n *controlv1alpha1.Binding
		want []ObjectKey
	}{
		{"new binding: all", nil, binding([]string{"c1"}, entry("a", "1")), []ObjectKey{key("a")}},
		{"deleted binding: all", binding([]string{"c1"}, entry("a", "1")), nil, []ObjectKey{key("a")}},
		{"resource version only: none", binding([]string{"c1"}, entry("a", "1"), entry("b", "1")),
			binding([]string{"c1"}, entry("a", "2"), entry("b", "1")), nil},
		{"modulation of one: that one", binding([]string{"c1"}, entry("a", "1"), entry("b", "1")),
			binding([]string{"c1"}, entry("a", "1", "x"), entry("b", "1")), []ObjectKey{key("a")}},
		{"added and removed", binding([]string{"c1"}, entry("a", "1")), binding([]string{"c1"}, entry("b", "1")), []ObjectKey{key("a"), key("b")}},
		{"destinations changed: all of both", binding([]string{"c1"}, entry("a", "1"), entry("b", "1")),
			binding([]string{"c1", "c2"}, entry("a", "1"), entry("b", "1")), []ObjectKey{key("a"), key("b"), key("a"), key("b")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ChangedBound(tc.o, tc.n)
			slices.SortFunc(got, func(x, y ObjectKey) int { return strings.Compare(x.String(), y.String()) })
			slices.SortFunc(tc.want, func(x, y ObjectKey) int { return strings.Compare(x.String(), y.String()) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("changedBound = %v, want %v", got, tc.want)
			}
		})
	}
}

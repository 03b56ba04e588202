package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// testClusterLabels: a cluster's label change moves it into and out of a policy's destinations.
func testClusterLabels(t *testing.T, c client.Client) {
	ns := "moves"
	addCluster(t, c, "mv1", map[string]string{"zone": "a"})
	addCluster(t, c, "mv2", map[string]string{"zone": "b"})
	d := deployment(t, c, ns, "web", 1, nil)
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "a"}}}
	clause("apps", "deployments", ns, nil, collectors("full-status"))(bp)
	create(t, c, bp)
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv1", "null"}})
	setClusterLabels(t, c, "mv2", map[string]string{"zone": "a"})
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv1", "null"}, {"mv2", "null"}})
	setClusterLabels(t, c, "mv1", map[string]string{"zone": "b"})
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv2", "null"}})
}

// testTwoPolicies: one object, two policies, two CombinedStatus objects.
func testTwoPolicies(t *testing.T, c client.Client) {
	ns := "two"
	d := deployment(t, c, ns, "web", 1, nil)
	create(t, c,
		policy("two-a", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-wecs"))),
		policy("two-b", []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-wecs"))))
	expectResult(t, c, d, "two-a", ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, d, "two-b", ns, "count-wecs", [][]string{{"2"}})
	// Deleting one policy removes its pair only.
	if err := c.Delete(context.Background(), &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "two-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "only two-b's CombinedStatus is left", func() error {
		var list controlv1alpha1.CombinedStatusList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var policies []string
		for _, cs := range list.Items {
			policies = append(policies, cs.Labels[controlv1alpha1.LabelCombinedStatusBindingPolicy])
		}
		if !slices.Equal(policies, []string{"two-b"}) {
			return fmt.Errorf("CombinedStatus of policies %v", policies)
		}
		return nil
	})
}

// testClusterScoped: a cluster-scoped object's CombinedStatus lives in kubestellar-report.
func testClusterScoped(t *testing.T, c client.Client) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-test-role"}}
	create(t, c, role)
	bp := policy("cluster-scoped", []string{"wec1", "wec2"}, clause("rbac.authorization.k8s.io", "clusterroles", "", []string{role.Name}, collectors("count-wecs")))
	bp.Spec.Downsync[0].Namespaces = []string{"*"}
	create(t, c, bp)
	cs := expectResult(t, c, role, "cluster-scoped", controlv1alpha1.ReportNamespace, "count-wecs", [][]string{{"2"}})
	if cs.Labels[controlv1alpha1.LabelCombinedStatusNamespace] != "" || cs.Labels[controlv1alpha1.LabelCombinedStatusResource] != "clusterroles" {
		t.Errorf("labels %v", cs.Labels)
	}
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: "cluster-scoped"}, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.Workload.ClusterScope) != 1 || b.Spec.Workload.ClusterScope[0].Name != role.Name || b.Spec.Workload.ClusterScope[0].Version != "v1" {
		t.Errorf("binding clusterScope %+v", b.Spec.Workload.ClusterScope)
	}
	if !slices.Equal(destNames(&b), []string{"wec1", "wec2"}) {
		t.Errorf("destinations %v", destNames(&b))
	}
	if err := c.Delete(context.Background(), role); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster-scoped object's CombinedStatus deleted", func() error {
		_, err := combinedStatus(c, role, "cluster-scoped", controlv1alpha1.ReportNamespace)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
}

func destNames(b *controlv1alpha1.Binding) []string {
	var out []string
	for _, d := range b.Spec.Destinations {
		out = append(out, d.ClusterId)
	}
	return out
}

// testWildcard: the shape of KubeStellar's documented BindingPolicy, objectSelectors alone
// (api/control/v1alpha1/testdata/bindingpolicies.yaml), selects objects of every resource
// (discovery-wide watches).
func testWildcard(t *testing.T, c client.Client, agg *aggregator.Aggregator) {
	ns := "wildcard"
	lbl := map[string]string{"app.kubernetes.io/name": "wild"}
	d := deployment(t, c, ns, "web", 1, lbl)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg", Labels: lbl}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}}
	create(t, c, cm, other)
	bp := policy(ns, []string{"wec1"})
	bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: lbl}}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"count-wecs"}},
	}}
	create(t, c, bp)
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, cm, ns, ns, "count-wecs", [][]string{{"1"}})
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range b.Spec.Workload.NamespaceScope {
		names = append(names, o.Resource+"/"+o.Name)
	}
	if !slices.Equal(names, []string{"configmaps/cfg", "deployments/web"}) {
		t.Errorf("binding lists %v, want [configmaps/cfg deployments/web]", names)
	}
	// Deleting the policy stops the watches only it needed (configmaps), and keeps the others.
	if !slices.Contains(agg.WatchedResources(), "/v1, Resource=configmaps") {
		t.Fatalf("configmaps not watched while the policy selects them: %v", agg.WatchedResources())
	}
	if err := c.Delete(context.Background(), bp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "configmaps no longer watched", func() error {
		w := agg.WatchedResources()
		if slices.Contains(w, "/v1, Resource=configmaps") || !slices.Contains(w, "apps/v1, Resource=deployments") {
			return fmt.Errorf("watched %v", w)
		}
		return nil
	})
}

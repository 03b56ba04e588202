package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestReadAccessRevoked runs the manager with narrowed RBAC (as TestNamespacedReadsOnly): a Role
// reading ConfigMaps in namespace a, a ClusterRole reading ServiceAccounts everywhere, and a Role
// that lists ConfigMaps in namespace c but may not watch them (docs/security.md, "Read access
// revoked"). Once the Bindings are resolved, the RoleBinding and the ClusterRoleBinding are
// deleted: both policies get ResourcesReadable=False with the Event ResourceNotReadable and
// statusfold_errors_total{where="read-access"}, and their Bindings keep their entries, also that
// of a ConfigMap deleted meanwhile. Once the bindings are back the condition goes and the
// Bindings follow the objects as they are. It logs how long each change took to show.
func TestReadAccessRevoked(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	applyRBACWithoutClusterReads(t, cp)
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	for _, ns := range []string{"a", "c"} {
		ensureNamespace(t, c, ns)
	}
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm0"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "cm0"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "sa0"}})
	readConfigMapsIn(t, c, "a")
	grant := readServiceAccounts(t, c)
	grantConfigMapsIn(t, c, "c", "statusfold-list-only", "get", "list")
	startManagerAs(t, cp, aggregator.Options{CatalogRefresh: time.Second, WorkloadWatchTimeout: 2 * time.Second})

	create(t, c, policy("cms", []string{"wec1"}, clause("", "configmaps", "a", nil)),
		policy("sas", []string{"wec1"}, clause("", "serviceaccounts", "", []string{"sa0"})),
		policy("list-only", []string{"wec1"}, clause("", "configmaps", "c", nil)))
	expectBoundNames(t, c, "cms", "configmaps", "cm0", "cm1")
	expectBoundNames(t, c, "sas", "serviceaccounts", "sa0")
	// Listed, so resolved, but not watched: its view would be frozen from the start.
	expectBoundNames(t, c, "list-only", "configmaps", "cm0")
	expectReadable(t, c, "list-only", "may no longer be read by statusfold's identity in namespace c")

	errsBefore := counter(t, "statusfold_errors_total", "where", "read-access")
	revoked := time.Now()
	for _, o := range []client.Object{managerRoleBinding("a", "statusfold-reads"), grant} {
		if err := c.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	expectReadable(t, c, "cms", "in namespace a")
	toCMs := time.Since(revoked)
	expectReadable(t, c, "sas", "frozen since")
	toSAs := time.Since(revoked)
	expectEvent(t, c, "", "cms", "ResourceNotReadable", "frozen since")
	expectEvent(t, c, "", "sas", "ResourceNotReadable", "frozen since")
	if after := counter(t, "statusfold_errors_total", "where", "read-access"); after <= errsBefore {
		t.Errorf("statusfold_errors_total{where=read-access} %v, was %v", after, errsBefore)
	}

	// Deleted while it cannot be watched: the Binding keeps it, through later resolutions.
	if err := c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm0"}}); err != nil {
		t.Fatal(err)
	}
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm2"}})
	resolutions := counter(t, "statusfold_errors_total", "where", "read-access")
	eventually(t, "two more rounds of resolutions", func() error {
		if n := counter(t, "statusfold_errors_total", "where", "read-access"); n < resolutions+7 {
			return fmt.Errorf("%v read-access errors, want %v", n, resolutions+7)
		}
		return nil
	})
	expectBoundNames(t, c, "cms", "configmaps", "cm0", "cm1")
	expectBoundNames(t, c, "sas", "serviceaccounts", "sa0")

	restored := time.Now()
	create(t, c, managerRoleBinding("a", "statusfold-reads"))
	create(t, c, clusterRoleBinding(grant.Name))
	expectReadable(t, c, "cms", "")
	fromCMs := time.Since(restored)
	expectReadable(t, c, "sas", "")
	fromSAs := time.Since(restored)
	expectBoundNames(t, c, "cms", "configmaps", "cm1", "cm2")
	t.Logf("revoked → ResourcesReadable=False: namespace Role %s, ClusterRole %s; restored → condition gone: %s, %s",
		toCMs.Round(time.Millisecond), toSAs.Round(time.Millisecond), fromCMs.Round(time.Millisecond), fromSAs.Round(time.Millisecond))
}

// readServiceAccounts lets the manager's identity read ServiceAccounts everywhere and returns
// the ClusterRoleBinding that grants it.
func readServiceAccounts(t *testing.T, c client.Client) *rbacv1.ClusterRoleBinding {
	t.Helper()
	crb := clusterRoleBinding("statusfold-reads-serviceaccounts")
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crb.Name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "list", "watch"}}}}, crb)
	return crb
}

func clusterRoleBinding(name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "statusfold-system", Name: "statusfold-manager"}}}
}

// expectBoundNames waits until the Binding lists exactly the named objects of the resource.
func expectBoundNames(t *testing.T, c client.Client, name, resource string, names ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("Binding %s lists %s %v", name, resource, names), func() error {
		var bdg controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bdg); err != nil {
			return err
		}
		var got []string
		for _, o := range bdg.Spec.Workload.NamespaceScope {
			if o.Resource == resource {
				got = append(got, o.Name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			return fmt.Errorf("lists %v", got)
		}
		return nil
	})
}

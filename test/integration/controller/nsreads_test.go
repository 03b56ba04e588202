package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestNamespacedReadsOnly runs the manager with its RBAC (config/rbac) minus the rule that reads
// every resource cluster-wide, and a Role reading ConfigMaps in namespace a only
// (docs/security.md, "Reads"): a policy that selects ConfigMaps in a is resolved and its
// CombinedStatus written, without ResourcesReadable=False; one that selects them in b gets the
// condition naming b, and one that selects them in a and b gets it too while a's objects are
// resolved; both lose it once a Role grants the reads in b.
func TestNamespacedReadsOnly(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	applyRBACWithoutClusterReads(t, cp)
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	create(t, c, kubestellarDocCollectors()...)
	for _, ns := range []string{"a", "b"} {
		ensureNamespace(t, c, ns)
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm0"}})
	}
	readConfigMapsIn(t, c, "a")
	startManagerAs(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	create(t, c, policy("in-a", []string{"wec1"}, clause("", "configmaps", "a", nil, collectors("count-wecs"))))
	expectBound(t, c, "in-a", "a", 1)
	expectResult(t, c, configMap(t, c, "a", "cm0"), "in-a", "a", "count-wecs", [][]string{{"1"}})

	create(t, c, policy("in-b", []string{"wec1"}, clause("", "configmaps", "b", nil, collectors("count-wecs"))))
	expectReadable(t, c, "in-b", "in namespace b")
	inBoth := func(c *controlv1alpha1.DownsyncPolicyClause) { c.Namespaces = []string{"a", "b"} }
	create(t, c, policy("in-both", []string{"wec1"}, clause("", "configmaps", "", nil, inBoth)))
	expectReadable(t, c, "in-both", "in namespace b")
	expectBound(t, c, "in-both", "a", 1) // a is resolved all the same
	if cond, err := readableCondition(c, "in-a"); err != nil || cond != nil {
		t.Errorf("in-a: ResourcesReadable %+v (%v); want none", cond, err)
	}

	readConfigMapsIn(t, c, "b")
	expectReadable(t, c, "in-b", "")
	expectBound(t, c, "in-b", "b", 1)
	expectReadable(t, c, "in-both", "")
	expectBound(t, c, "in-both", "b", 1)
	expectResult(t, c, configMap(t, c, "b", "cm0"), "in-b", "b", "count-wecs", [][]string{{"1"}})
}

// applyManagerRBAC applies the manager's RBAC (config/rbac), bound to managerIdentity.
func applyManagerRBAC(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, cp.Client, "statusfold-system")
	out, stderr, err := cp.Kubectl(ctx, nil, "kustomize", filepath.Join(framework.RepoRoot(), "config", "rbac"))
	if err != nil {
		t.Fatalf("kustomize: %v: %s", err, stderr)
	}
	if _, stderr, err := cp.Kubectl(ctx, []byte(out), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply config/rbac: %v: %s", err, stderr)
	}
}

// applyRBACWithoutClusterReads applies the manager's RBAC, then removes from its ClusterRole the
// rule that reads every resource cluster-wide.
func applyRBACWithoutClusterReads(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	applyManagerRBAC(t, cp)
	var role rbacv1.ClusterRole
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "statusfold-manager"}, &role); err != nil {
		t.Fatal(err)
	}
	before := len(role.Rules)
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "*") && slices.Contains(r.Resources, "*")
	})
	if len(role.Rules) != before-1 {
		t.Fatalf("config/rbac: %d rules read every resource, want 1", before-len(role.Rules))
	}
	if err := cp.Client.Update(ctx, &role); err != nil {
		t.Fatal(err)
	}
}

// readConfigMapsIn lets the manager's identity read ConfigMaps in namespace ns: a Role and its
// RoleBinding there.
func readConfigMapsIn(t *testing.T, c client.Client, ns string) {
	t.Helper()
	grantConfigMapsIn(t, c, ns, "statusfold-reads", "get", "list", "watch")
}

// grantConfigMapsIn grants the manager's identity verbs on ConfigMaps in namespace ns: a Role
// and its RoleBinding there, both named name.
func grantConfigMapsIn(t *testing.T, c client.Client, ns, name string, verbs ...string) {
	t.Helper()
	create(t, c,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}},
		managerRoleBinding(ns, name))
}

// managerRoleBinding binds the Role name of namespace ns to the manager's ServiceAccount.
func managerRoleBinding(ns, name string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "statusfold-system", Name: "statusfold-manager"}}}
}

// startManagerAs starts the manager impersonating the manager's ServiceAccount
// (managerIdentity), with its log kept for a failing test.
func startManagerAs(t *testing.T, cp *framework.ControlPlane, opts aggregator.Options) *logBuffer {
	t.Helper()
	asManager := rest.CopyConfig(cp.Config)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: managerIdentity}
	return startLoggedManager(t, cp, asManager, opts)
}

// readableCondition is the policy's ResourcesReadable condition, nil when it has none.
func readableCondition(c client.Client, name string) (*controlv1alpha1.BindingPolicyCondition, error) {
	var bp controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bp); err != nil {
		return nil, err
	}
	for i, cond := range bp.Status.Conditions {
		if cond.Type == controlv1alpha1.ConditionResourcesReadable {
			return &bp.Status.Conditions[i], nil
		}
	}
	return nil, nil
}

// expectReadable waits until the policy has ResourcesReadable=False, reason Forbidden, whose
// message holds msgPart; with msgPart "", until it has no ResourcesReadable condition.
func expectReadable(t *testing.T, c client.Client, name, msgPart string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s ResourcesReadable %q", name, msgPart), func() error {
		cond, err := readableCondition(c, name)
		switch {
		case err != nil:
			return err
		case msgPart == "" && cond != nil:
			return fmt.Errorf("still %s: %s", cond.Reason, cond.Message)
		case msgPart == "":
			return nil
		case cond == nil:
			return fmt.Errorf("no condition")
		case cond.Status != corev1.ConditionFalse || cond.Reason != "Forbidden" || !strings.Contains(cond.Message, msgPart):
			return fmt.Errorf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
		}
		return nil
	})
}

package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// TestRequesterAccess runs the webhooks against a real apiserver with RBAC and acts as the
// restricted user alice (impersonation), who may create AggregationPolicies and BindingPolicies
// but has no other rights (docs/security.md, "Confused deputy"):
//   - alice's AggregationPolicy for apps/Deployment is refused, naming spec.target and the
//     permission she lacks, until she may patch deployments/status cluster-wide;
//   - alice's BindingPolicy whose clause selects Secrets in team-a and names a collector is
//     refused, naming spec.downsync[0], until she may get and list Secrets in team-a; a clause
//     with resources ["*"] and a collector needs that cluster-wide; without a collector it is
//     admitted.
func TestRequesterAccess(t *testing.T) {
	e := startAdmission(t)
	admin := e.cp.Client
	mustCreate(t, admin,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "policy-author"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{policyv1alpha1.GroupVersion.Group}, Resources: []string{"aggregationpolicies"}, Verbs: []string{"create", "get", "update"}},
			{APIGroups: []string{controlv1alpha1.GroupVersion.Group}, Resources: []string{"bindingpolicies"}, Verbs: []string{"create", "get", "update"}},
		}},
		binding("policy-author"),
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "secret-data"},
			Spec: controlv1alpha1.StatusCollectorSpec{Limit: 5, CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"}}}})
	cfg := rest.CopyConfig(e.cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := client.New(cfg, client.Options{Scheme: e.cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	ap := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deployments-by-alice"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "Deployment"},
			Rego: "package statusfold.user.deployments\n\nstatus := {\"replicas\": 42}\n"}}
	refused(t, alice, ap, "spec.target", "needs patch on deployments/status in apps cluster-wide: alice may not")
	mustCreate(t, admin,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "deployment-status"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/status"}, Verbs: []string{"patch"}}}},
		binding("deployment-status"))
	admitted(t, alice, ap)

	secrets := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "secrets-by-alice"},
		Spec: controlv1alpha1.BindingPolicySpec{Downsync: []controlv1alpha1.DownsyncPolicyClause{{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To(""), Resources: []string{"secrets"}, Namespaces: []string{"team-a"}},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"secret-data"}}}}}}
	refused(t, alice, secrets, "spec.downsync[0]", `needs get and list on secrets in namespace team-a: alice may not`)
	wildcard := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "everything-by-alice"},
		Spec: controlv1alpha1.BindingPolicySpec{Downsync: []controlv1alpha1.DownsyncPolicyClause{{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"secret-data"}}}}}}
	noCollector := wildcard.DeepCopy()
	noCollector.Name, noCollector.Spec.Downsync[0].StatusCollectors = "everything-no-collector", nil
	admitted(t, alice, noCollector)

	mustCreate(t, admin,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader", Namespace: "team-a"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader", Namespace: "team-a"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}})
	admitted(t, alice, secrets)
	// Secrets in team-a are not Secrets everywhere.
	refused(t, alice, wildcard, "spec.downsync[0]", "needs get and list on secrets cluster-wide: alice may not")
}

// binding binds the ClusterRole name to alice.
func binding(name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// refused checks that a server-side dry run of obj's creation is denied with a message naming
// path and containing want.
func refused(t *testing.T, c client.Client, obj client.Object, path, want string) {
	t.Helper()
	err := c.Create(context.Background(), obj.DeepCopyObject().(client.Object), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), path+": Forbidden: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("creating %s as alice: %v, want a denial at %s with %q", obj.GetName(), err, path, want)
	}
}

// admitted waits (RBAC changes reach the authorizer after a moment) until a server-side dry run
// of obj's creation is admitted.
func admitted(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		err = c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		return err == nil, nil
	}) != nil {
		t.Errorf("creating %s as alice: %v, want it admitted", obj.GetName(), err)
	}
}

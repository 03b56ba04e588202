package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/statusfold/statusfold/test/framework"
)

// TestRBACLeastPrivilege applies config/rbac for real and asks the apiserver (SubjectAccessReview,
// through `kubectl auth can-i --as`) what the manager's ServiceAccount may do: everything statusfold
// writes is allowed, and there is no wildcard write. envtest runs no clusterrole-aggregation
// controller, so the test binds statusfold-status-writer-builtin directly to stand for the
// aggregated statusfold-status-writer.
func TestRBACLeastPrivilege(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	ensureNamespace(t, cp, "statusfold-system")
	out, stderr, err := cp.Kubectl(ctx, nil, "kustomize", framework.RepoRoot()+"/config/rbac")
	if err != nil {
		t.Fatalf("kustomize: %v: %s", err, stderr)
	}
	if _, stderr, err := cp.Kubectl(ctx, []byte(out), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply config/rbac: %v: %s", err, stderr)
	}
	if _, stderr, err := cp.Kubectl(ctx, nil, "create", "clusterrolebinding", "test-builtin-writer",
		"--clusterrole=statusfold-status-writer-builtin", "--serviceaccount=statusfold-system:statusfold-manager"); err != nil {
		t.Fatalf("bind: %v: %s", err, stderr)
	}
	const sa = "system:serviceaccount:statusfold-system:statusfold-manager"
	cases := []struct {
		args []string
		want bool
	}{
		// What statusfold writes.
		{[]string{"patch", "deployments.apps", "--subresource=status", "-n", "demo"}, true},
		{[]string{"patch", "deployments.apps", "-n", "demo"}, true},
		{[]string{"patch", "jobs.batch", "--subresource=status", "-n", "demo"}, true},
		{[]string{"patch", "horizontalpodautoscalers.autoscaling", "--subresource=status", "-n", "demo"}, true},
		{[]string{"patch", "combinedstatuses.control.kubestellar.io", "-n", "demo"}, true},
		{[]string{"patch", "bindings.control.kubestellar.io"}, true},
		{[]string{"patch", "statuscollectors.control.kubestellar.io", "--subresource=status"}, true},
		{[]string{"get", "secrets/statusfold-webhook-server-cert", "-n", "statusfold-system"}, true},
		{[]string{"update", "secrets/statusfold-webhook-server-cert", "-n", "statusfold-system"}, true},
		{[]string{"create", "secrets", "-n", "statusfold-system"}, true},
		{[]string{"update", "validatingwebhookconfigurations/statusfold-validating-webhook-configuration"}, true},
		{[]string{"list", "configmaps", "-A"}, true}, // reads: `resources: ["*"]` policies may select anything (see docs/security.md)
		// No wildcard write, and nothing beyond what it needs.
		{[]string{"patch", "secrets", "-n", "demo"}, false},
		{[]string{"update", "secrets/other", "-n", "statusfold-system"}, false},
		{[]string{"patch", "secrets", "--subresource=status", "-n", "demo"}, false},
		{[]string{"patch", "configmaps", "--subresource=status", "-n", "demo"}, false},
		{[]string{"update", "secrets/statusfold-webhook-server-cert", "-n", "kube-system"}, false},
		{[]string{"patch", "configmaps", "-n", "demo"}, false},
		{[]string{"patch", "clusterroles.rbac.authorization.k8s.io"}, false},
		{[]string{"patch", "customresourcedefinitions.apiextensions.k8s.io"}, false},
		{[]string{"update", "validatingwebhookconfigurations/someone-elses"}, false},
		{[]string{"delete", "deployments.apps", "-n", "demo"}, false},
		{[]string{"patch", "statuscollectors.control.kubestellar.io"}, false},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, _ := cp.Kubectl(ctx, nil, append([]string{"auth", "can-i", "--as", sa}, tc.args...)...)
			got := strings.TrimSpace(out) == "yes"
			if got != tc.want {
				t.Errorf("can-i %v = %q, want %v", tc.args, strings.TrimSpace(out), tc.want)
			}
		})
	}
}

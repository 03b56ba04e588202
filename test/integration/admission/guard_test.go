package admission

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/test/framework"
)

// managerUser is the user name of the manager's ServiceAccount in config/default.
const managerUser = "system:serviceaccount:statusfold-system:statusfold-manager"

// TestManagerGuard applies config/default/guard (the ValidatingAdmissionPolicy the chart ships as
// managerGuard) to a real apiserver and acts as the manager's ServiceAccount, which RBAC lets
// update and patch Deployments: a change of the spec, of another label or of an annotation is
// denied with the guard's message; a server-side apply of the status-return labels, and a status
// write, are admitted; the same spec change by another user is admitted.
func TestManagerGuard(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithoutCRDs())
	ctx, admin := context.Background(), cp.Client
	out, stderr, err := cp.Kubectl(ctx, nil, "kustomize", filepath.Join(framework.RepoRoot(), "config", "default", "guard"))
	if err != nil {
		t.Fatalf("kustomize: %v: %s", err, stderr)
	}
	if _, stderr, err := cp.Kubectl(ctx, []byte(out), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply config/default/guard: %v: %s", err, stderr)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	mustCreate(t, admin, d,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "deployment-writer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/status"}, Verbs: []string{"get", "update", "patch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployment-writer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "deployment-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: managerUser}}})
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: managerUser}
	manager, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, body string, opts ...client.PatchOption) error {
		return c.Patch(ctx, d.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(body)), opts...)
	}
	// The policy is in force once the apiserver has loaded it: wait for the first denial.
	const want = "statusfold's ServiceAccount may change"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := patch(manager, `{"spec":{"replicas":5}}`, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), want), nil
	})
	if err != nil {
		t.Fatalf("a spec change by the manager is not denied: %v", patch(manager, `{"spec":{"replicas":5}}`, client.DryRunAll))
	}
	for _, forbidden := range []string{`{"spec":{"replicas":5}}`, `{"metadata":{"labels":{"app":"other"}}}`,
		`{"metadata":{"labels":{"owner":"statusfold"}}}`, `{"metadata":{"annotations":{"a":"b"}}}`, `{"metadata":{"labels":{"app":null}}}`} {
		if err := patch(manager, forbidden); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("patch %s by the manager: %v, want denied (%q)", forbidden, err, want)
		}
	}
	apply := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "default", "name": "web",
			"labels": map[string]any{"kubestellar.io/executing-count": "2", "managed-by.kubestellar.io/multiwecstatus": "true"}}}}
	if err := manager.Patch(ctx, apply, client.Apply, client.FieldOwner("statusfold"), client.ForceOwnership); err != nil {
		t.Errorf("server-side apply of the status-return labels by the manager: %v", err)
	}
	if err := manager.Status().Patch(ctx, d.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"status":{"replicas":3}}`))); err != nil {
		t.Errorf("a status write by the manager: %v", err)
	}
	if err := patch(admin, `{"spec":{"replicas":5},"metadata":{"labels":{"owner":"me"}}}`); err != nil {
		t.Errorf("the same changes by another user: %v", err)
	}
	var got appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Labels) != "map[app:web kubestellar.io/executing-count:2 managed-by.kubestellar.io/multiwecstatus:true owner:me]" {
		t.Errorf("labels %v", got.Labels)
	}
}

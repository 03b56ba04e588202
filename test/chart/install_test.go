package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestHelmInstallUpgradeUninstall installs the chart with Helm into a real apiserver that has
// none of statusfold's CRDs, upgrades it with changed values, and uninstalls it: the CRDs and
// the users' objects stay.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	requireTools(t)
	h := &helmRelease{t: t, ctx: context.Background(), cp: framework.RunControlPlane(t, framework.WithoutCRDs())}
	c := h.cp.Client
	h.install()
	crds := chartCRDs(t)
	h.expectCRDs(crds, "after install")
	d := managerDeployment(t, c)
	if *d.Spec.Replicas != 2 || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--wds-name=wds1") ||
		!slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--leader-elect") {
		t.Errorf("installed Deployment: replicas %d, args %v", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	// The release holds the rendered objects.
	manifest := h.helm("get", "manifest", "statusfold", "--namespace", namespace)
	for _, want := range []string{"kind: Deployment", "kind: ValidatingWebhookConfiguration", "kind: PodDisruptionBudget", "name: statusfold-status-writer"} {
		if !strings.Contains(manifest, want) {
			t.Errorf("helm get manifest lacks %q", want)
		}
	}

	// A user's object (WorkStatuses are not admitted by statusfold's webhooks, which have no
	// manager serving them in this test).
	ensureNamespace(t, c, "wec1")
	ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "wec1", Name: "users-object"},
		Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "demo", Name: "web"}}}
	if err := c.Create(h.ctx, ws); err != nil {
		t.Fatal(err)
	}

	h.upgrade()
	h.uninstall()
	h.expectCRDs(crds, "after uninstall (CRDs must stay)")
	if err := c.Get(h.ctx, client.ObjectKeyFromObject(ws), ws); err != nil {
		t.Errorf("the user's WorkStatus after uninstall: %v", err)
	}
}

// helmRelease is TestHelmInstallUpgradeUninstall's release "statusfold" in namespace, on cp.
type helmRelease struct {
	t   *testing.T
	ctx context.Context
	cp  *framework.ControlPlane
}

// helm runs helm on the control plane, logs how long it took, and returns its output.
func (h *helmRelease) helm(args ...string) string {
	h.t.Helper()
	start := time.Now()
	out, err := framework.Helm(h.ctx, h.t, h.cp.Kubeconfig, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Logf("helm %s: %s", args[0], time.Since(start).Round(time.Millisecond))
	return out
}

// install creates the namespace, which enforces the restricted Pod Security Standard as
// config/manager's does (the apiserver warns about, and would refuse pods of, a Deployment that
// breaks it), and installs the chart: no Pod Security warning.
func (h *helmRelease) install() {
	t := h.t
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	ns.SetLabels(map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"})
	if err := h.cp.Client.Create(h.ctx, ns); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, warnings, err := framework.HelmOutput(h.ctx, t, h.cp.Kubeconfig, "install", "statusfold", framework.ChartDir(), "--namespace", namespace)
	if err != nil {
		t.Fatalf("helm install: %v: %s", err, warnings)
	}
	t.Logf("helm install: %s", time.Since(start).Round(time.Millisecond))
	if strings.Contains(warnings, "PodSecurity") {
		t.Errorf("the manager's pods break the restricted Pod Security Standard:\n%s", warnings)
	}
}

// expectCRDs checks that every CRD named is installed.
func (h *helmRelease) expectCRDs(names []string, when string) {
	for _, name := range names {
		if _, err := h.cp.Dynamic.Resource(crdGVR).Get(h.ctx, name, metav1.GetOptions{}); err != nil {
			h.t.Errorf("CRD %s %s: %v", name, when, err)
		}
	}
}

// upgrade upgrades the release with changed values, which reach the manager's Deployment.
func (h *helmRelease) upgrade() {
	t := h.t
	h.helm("upgrade", "statusfold", framework.ChartDir(), "--namespace", namespace, "--reuse-values",
		"--set", "wdsName=wds2", "--set", "replicaCount=3", "--set", "bindingResolution=external")
	d := managerDeployment(t, h.cp.Client)
	args := d.Spec.Template.Spec.Containers[0].Args
	if *d.Spec.Replicas != 3 || !slices.Contains(args, "--wds-name=wds2") || slices.Contains(args, "--wds-name=wds1") ||
		!slices.Contains(args, "--binding-resolution=external") {
		t.Errorf("upgraded Deployment: replicas %d, args %v", *d.Spec.Replicas, args)
	}
	if d.Generation < 2 {
		t.Errorf("upgraded Deployment has generation %d: the upgrade did not change it", d.Generation)
	}
	if out := h.helm("history", "statusfold", "--namespace", namespace); !strings.Contains(out, "Upgrade complete") {
		t.Errorf("helm history does not show the upgrade:\n%s", out)
	}
}

// uninstall uninstalls the release: the manager's objects and webhook configuration go.
func (h *helmRelease) uninstall() {
	t, c := h.t, h.cp.Client
	h.helm("uninstall", "statusfold", "--namespace", namespace)
	for _, gone := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "statusfold-manager"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-manager"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-status-writer"}},
	} {
		if err := c.Get(h.ctx, client.ObjectKeyFromObject(gone), gone); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after uninstall: %v, want NotFound", gone, gone.GetName(), err)
		}
	}
	vwc := &unstructured.Unstructured{}
	vwc.SetAPIVersion("admissionregistration.k8s.io/v1")
	vwc.SetKind("ValidatingWebhookConfiguration")
	if err := c.Get(h.ctx, client.ObjectKey{Name: "statusfold-validating-webhook-configuration"}, vwc); !apierrors.IsNotFound(err) {
		t.Errorf("webhook configuration after uninstall: %v, want NotFound", err)
	}
}

// chartCRDs are the names of the CRDs in charts/statusfold/crds.
func chartCRDs(t *testing.T) []string {
	t.Helper()
	out, err := framework.Helm(context.Background(), t, "", "show", "crds", framework.ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range parseObjects(t, out) {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	if len(names) != 8 {
		t.Fatalf("helm show crds: %d CRDs %v, want 8", len(names), names)
	}
	return names
}

func managerDeployment(t *testing.T, c client.Client) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "statusfold-manager"}, &d); err != nil {
		t.Fatalf("manager Deployment: %v", err)
	}
	return &d
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	if err := c.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(fmt.Errorf("namespace %s: %w", name, err))
	}
}

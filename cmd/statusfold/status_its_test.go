package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// runStatus runs `statusfold status` with args.
func runStatus(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runCLI(t, append([]string{"status"}, args...)...)
}

// TestStatusSeparateITS: with the WDS and the ITS in two apiservers, `statusfold status` reads the
// WorkStatuses from --its-kubeconfig, only those of its WDS (--wds-name), and says clearly when
// the apiserver it reads WorkStatuses from does not serve them.
func TestStatusSeparateITS(t *testing.T) {
	wds := framework.RunControlPlane(t)
	its := framework.RunControlPlane(t)
	ctx := context.Background()
	c := wds.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	b.Spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
		GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "demo", Name: "web"}}}
	b.Spec.Destinations = []controlv1alpha1.Destination{{ClusterId: "wec1"}, {ClusterId: "wec2"}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	// In the ITS: wec1 reports for this WDS; wec2's WorkStatus belongs to another WDS.
	for wec, origin := range map[string]string{"wec1": "wds1", "wec2": "wds2"} {
		if err := its.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wec}}); err != nil {
			t.Fatal(err)
		}
		ws := &controlv1alpha1.WorkStatus{
			ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: "deployments-demo-web", Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: origin}},
			Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments",
				Kind: "Deployment", Namespace: "demo", Name: "web"}},
			StatusDetails: controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true},
		}
		if err := its.Client.Create(ctx, ws); err != nil {
			t.Fatal(err)
		}
		ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: []byte(`{"observedGeneration":1,"replicas":2,"readyReplicas":2}`)}}
		if err := its.Client.Status().Update(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	reported := func(out string) map[string]bool {
		t.Helper()
		var rep statusReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("output is not the JSON report: %v\n%s", err, out)
		}
		m := map[string]bool{}
		for _, w := range rep.WECs {
			m[w.Name] = w.Reported
		}
		return m
	}

	out, err := runStatus(t, "deployment/web", "-n", "demo", "-o", "json", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if got := reported(out); len(got) != 2 || !got["wec1"] || got["wec2"] {
		t.Errorf("reported = %v, want wec1 reported and wec2 (another WDS's WorkStatus) not", got)
	}
	out, err = runStatus(t, "deployment/web", "-n", "demo", "-o", "json", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig, "--wds-name", "wds2")
	if err != nil {
		t.Fatalf("status --wds-name wds2: %v\n%s", err, out)
	}
	if got := reported(out); !got["wec2"] || got["wec1"] {
		t.Errorf("with --wds-name wds2: reported = %v, want only wec2", got)
	}

	utilruntimeMust(t, apiextensionsv1.AddToScheme(c.Scheme()))
	// untilFails runs status with args until it fails with an error that mentions about (the
	// apiserver stops serving a deleted CRD's kind within moments) and returns the last result.
	untilFails := func(about string, args ...string) error {
		var err error
		for range 100 {
			if out, err = runStatus(t, append([]string{"deployment/web", "-n", "demo"}, args...)...); err != nil && strings.Contains(err.Error(), about) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	}

	// A WDS without Bindings: a clear error, not a report that silently leaves out every WEC that
	// has not reported (wec2 here).
	bindingsCRD := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "bindings.control.kubestellar.io"}}
	if err := c.Delete(ctx, bindingsCRD); err != nil {
		t.Fatal(err)
	}
	if err := untilFails("Bindings", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig); err == nil || !strings.Contains(err.Error(), "Bindings") {
		// While the CRD goes away the list may fail otherwise than "not served": either way an error.
		t.Errorf("status against a WDS without Bindings: %v, want an error about reading the Bindings", err)
	}

	// A WDS that does not serve WorkStatuses, used as the ITS: a clear error, not "not yet" WECs.
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "workstatuses.control.kubestellar.io"}}
	if err := c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	lastErr := untilFails("WorkStatuses", "--kubeconfig", wds.Kubeconfig)
	if lastErr == nil || !strings.Contains(lastErr.Error(), "does not serve WorkStatuses") || !strings.Contains(lastErr.Error(), "--its-kubeconfig") {
		t.Errorf("status against an apiserver without WorkStatuses: %v, want an error naming the missing kind and --its-kubeconfig", lastErr)
	}
	// An unserved resource type is named as such.
	if _, err := runStatus(t, "gadgets/x", "-n", "demo", "--kubeconfig", wds.Kubeconfig); err == nil || !strings.Contains(err.Error(), "not served by the WDS") {
		t.Errorf("status gadgets/x: %v, want an error saying the type is not served", err)
	}
}

func utilruntimeMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

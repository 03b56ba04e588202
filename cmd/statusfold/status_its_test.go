package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	mustCreate(t, ctx, wds.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}})
	mustCreate(t, ctx, wds.Client, webDeployment(nil))
	mustCreate(t, ctx, wds.Client, webBinding("demo", "wec1", "wec2"))
	// In the ITS: wec1 reports for this WDS; wec2's WorkStatus belongs to another WDS.
	for wec, origin := range map[string]string{"wec1": "wds1", "wec2": "wds2"} {
		mustCreate(t, ctx, its.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wec}})
		createWorkStatus(t, ctx, its.Client, wec, origin, "web", controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true},
			`{"observedGeneration":1,"replicas":2,"readyReplicas":2}`)
	}

	out, err := runStatus(t, "deployment/web", "-n", "demo", "-o", "json", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if got := reportedWECs(t, out); len(got) != 2 || !got["wec1"] || got["wec2"] {
		t.Errorf("reported = %v, want wec1 reported and wec2 (another WDS's WorkStatus) not", got)
	}
	out, err = runStatus(t, "deployment/web", "-n", "demo", "-o", "json", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig, "--wds-name", "wds2")
	if err != nil {
		t.Fatalf("status --wds-name wds2: %v\n%s", err, out)
	}
	if got := reportedWECs(t, out); !got["wec2"] || got["wec1"] {
		t.Errorf("with --wds-name wds2: reported = %v, want only wec2", got)
	}

	checkStatusNamesWhatIsNotServed(t, ctx, wds, its)
}

// reportedWECs decodes the JSON report out and returns, for each WEC in it, whether it reported.
func reportedWECs(t *testing.T, out string) map[string]bool {
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

// checkStatusNamesWhatIsNotServed deletes the Bindings CRD and then the WorkStatuses CRD from the
// WDS, and checks that `statusfold status` fails with an error that names what is missing each
// time, and that an unserved resource type is named as such.
func checkStatusNamesWhatIsNotServed(t *testing.T, ctx context.Context, wds, its *framework.ControlPlane) {
	t.Helper()
	c := wds.Client
	utilruntimeMust(t, apiextensionsv1.AddToScheme(c.Scheme()))

	// A WDS without Bindings: a clear error, not a report that silently leaves out every WEC that
	// has not reported (wec2 here).
	bindingsCRD := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "bindings.control.kubestellar.io"}}
	if err := c.Delete(ctx, bindingsCRD); err != nil {
		t.Fatal(err)
	}
	if err := statusUntilFails(t, "Bindings", "--kubeconfig", wds.Kubeconfig, "--its-kubeconfig", its.Kubeconfig); err == nil || !strings.Contains(err.Error(), "Bindings") {
		// While the CRD goes away the list may fail otherwise than "not served": either way an error.
		t.Errorf("status against a WDS without Bindings: %v, want an error about reading the Bindings", err)
	}

	// A WDS that does not serve WorkStatuses, used as the ITS: a clear error, not "not yet" WECs.
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "workstatuses.control.kubestellar.io"}}
	if err := c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	lastErr := statusUntilFails(t, "WorkStatuses", "--kubeconfig", wds.Kubeconfig)
	if lastErr == nil || !strings.Contains(lastErr.Error(), "does not serve WorkStatuses") || !strings.Contains(lastErr.Error(), "--its-kubeconfig") {
		t.Errorf("status against an apiserver without WorkStatuses: %v, want an error naming the missing kind and --its-kubeconfig", lastErr)
	}
	// An unserved resource type is named as such.
	if _, err := runStatus(t, "gadgets/x", "-n", "demo", "--kubeconfig", wds.Kubeconfig); err == nil || !strings.Contains(err.Error(), "not served by the WDS") {
		t.Errorf("status gadgets/x: %v, want an error saying the type is not served", err)
	}
}

// statusUntilFails runs status of deployment demo/web with args until it fails with an error that
// mentions about (the apiserver stops serving a deleted CRD's kind within moments) and returns
// the last error.
func statusUntilFails(t *testing.T, about string, args ...string) error {
	t.Helper()
	var err error
	for range 100 {
		if _, err = runStatus(t, append([]string{"deployment/web", "-n", "demo"}, args...)...); err != nil && strings.Contains(err.Error(), about) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func utilruntimeMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

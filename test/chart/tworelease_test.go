package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/test/framework"
)

// wdsRelease is one release per WDS: release name = WDS name, namespace <wds>-system, finding
// its spaces from KubeFlex ControlPlanes with one shared ITS (its1), beside KubeStellar.
type wdsRelease struct{ name, ns string }

func (r wdsRelease) installArgs() []string {
	return []string{"install", r.name, framework.ChartDir(), "--namespace", r.ns, "--set", "wdsName=" + r.name,
		"--set", "bindingResolution=external", "--set", "kubeflex.enabled=true", "--set", "kubeflex.itsName=its1"}
}

// TestHelmTwoReleases installs two releases of the chart, for wds1 and wds2, into one cluster,
// upgrades one and uninstalls it: the other's objects are never touched (same UID and
// resourceVersion), and no object name is shared.
func TestHelmTwoReleases(t *testing.T) {
	requireTools(t)
	cp := framework.RunControlPlane(t, framework.WithoutCRDs())
	ctx := context.Background()
	helm := func(args ...string) string {
		t.Helper()
		start := time.Now()
		out, err := framework.Helm(ctx, t, cp.Kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm %s %s: %s", args[0], args[1], time.Since(start).Round(time.Millisecond))
		return out
	}
	wds1, wds2 := wdsRelease{"wds1", "wds1-system"}, wdsRelease{"wds2", "wds2-system"}
	for _, ns := range []string{wds1.ns, wds2.ns, "its1-system"} {
		ensureNamespace(t, cp.Client, ns)
	}
	helm(wds1.installArgs()...)
	helm(wds2.installArgs()...)
	objs1 := releaseObjects(t, helm("get", "manifest", wds1.name, "--namespace", wds1.ns))
	objs2 := releaseObjects(t, helm("get", "manifest", wds2.name, "--namespace", wds2.ns))
	for k := range objs1 {
		if _, shared := objs2[k]; shared {
			t.Errorf("both releases have %s", k)
		}
	}
	d := objs1["Deployment/wds1-system/wds1-statusfold-manager"]
	if d == nil {
		t.Fatalf("no Deployment wds1-statusfold-manager: %v", keys(objs1))
	}
	args, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, want := range []string{"--kubeflex", "--its-name=its1", "--wds-name=wds1", "--leader-election-id=wds1-statusfold-manager.statusfold.dev",
		"--webhook-cert-secret=wds1-statusfold-webhook-server-cert", "--webhook-service=wds1-statusfold-webhook-service"} {
		if !slices.Contains(args[0].(map[string]any)["args"].([]any), any(want)) {
			t.Errorf("wds1's manager lacks %s: %v", want, args[0].(map[string]any)["args"])
		}
	}
	before := snapshot(t, cp.Client, objs2)

	helm("upgrade", wds1.name, framework.ChartDir(), "--namespace", wds1.ns, "--reuse-values", "--set", "replicaCount=3")
	expectUntouched(t, cp.Client, objs2, before, "after upgrading wds1")

	helm("uninstall", wds1.name, "--namespace", wds1.ns)
	for k, o := range objs1 {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy()); !apierrors.IsNotFound(err) {
			t.Errorf("%s after uninstalling wds1: %v, want NotFound", k, err)
		}
	}
	expectUntouched(t, cp.Client, objs2, before, "after uninstalling wds1")
	helm("upgrade", wds2.name, framework.ChartDir(), "--namespace", wds2.ns, "--reuse-values", "--set", "replicaCount=1")
	t.Logf("release wds2: %d objects, release wds1: %d", len(objs2), len(objs1))
}

// releaseObjects are the objects of a release's manifest, by kind, namespace and name.
func releaseObjects(t *testing.T, manifest string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := parseObjects(t, manifest)
	if len(objs) < 15 {
		t.Fatalf("the release has %d objects: %v", len(objs), keys(objs))
	}
	return objs
}

// snapshot reads each object and returns its UID and resourceVersion.
func snapshot(t *testing.T, c client.Client, objs map[string]*unstructured.Unstructured) map[string]string {
	t.Helper()
	got := map[string]string{}
	for k, o := range objs {
		live := o.DeepCopy()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		got[k] = string(live.GetUID()) + "/" + live.GetResourceVersion()
	}
	return got
}

func expectUntouched(t *testing.T, c client.Client, objs map[string]*unstructured.Unstructured, before map[string]string, when string) {
	t.Helper()
	after := snapshot(t, c, objs)
	var changed []string
	for k := range before {
		if after[k] != before[k] {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	if len(changed) > 0 {
		t.Errorf("release wds2's objects changed %s: %s", when, strings.Join(changed, ", "))
	}
}

package kscompat

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// TestKubeStellarTopology runs statusfold where KubeStellar's users run it: a hosting cluster with
// KubeFlex ControlPlanes, an ITS and two WDSes, each its own apiserver and etcd. Per WDS,
// KubeStellar's controller-manager runs with the arguments its core chart's hook renders plus
// --controllers=binding (`statusfold kubestellar takeover`), and statusfold is one release of the
// chart, running as the chart's ServiceAccount in the hosting cluster and finding both spaces from
// the ControlPlanes. Against each WDS with kubectl: a bad StatusCollector is rejected with its
// field paths, good ones and a ContentClassifier are applied, and CombinedStatuses and singleton
// and multi-WEC status return follow from KubeStellar's Bindings and the WECs' reports in the ITS.
func TestKubeStellarTopology(t *testing.T) {
	start := time.Now()
	tp := startTopology(t)
	wds1 := tp.addWDS(wdsName)
	procs := tp.startWDS(wdsName)
	t.Logf("topology with %s up in %s", wdsName, time.Since(start).Round(time.Millisecond))

	applyRejected(t, wds1)
	topologyInputs(t, tp, wds1)
	b := &beside{t: t, s: wds1, procs: procs}
	for name, dests := range map[string]string{"web": "e1 e2", "solo": "u1"} {
		b.expectBinding(name, dests)
	}
	b.expectCombinedStatus("web", "web", map[string]string{
		"per-wec":   fmt.Sprintf(`[wec avail returned] (String:"e1", Number:3, Object:%s) (String:"e2", Number:1, Object:%s)`, prunedJSON(3), prunedJSON(1)),
		"ready-sum": "[wecs ready] (Number:2, Number:4)",
	})
	b.expectReturned("solo", 2, "1", "singletonstatus")
	b.expectReturned("web", 1, "2", "multiwecstatus")
	t.Logf("%s scenario done at %s", wdsName, time.Since(start).Round(time.Millisecond))

	// A second WDS sharing the ITS, with a second release in the same hosting cluster.
	wds2 := tp.addWDS("wds2")
	procs2 := tp.startWDS("wds2")
	applyRejected(t, wds2)
	wds2.kubectlApply(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, deployment("shop", "web2"),
		statusCollector("per-wec", sel("wec", "inventory.name"), sel("avail", "returned.status.availableReplicas"), sel("returned", "returned.status")),
		bindingPolicy("web2", map[string]string{"region": "us", "kscompat": "beside"}, "apps", "deployments",
			map[string]string{"app": "web2"}, ksv1alpha1.DownsyncModulation{WantSingletonReportedState: true, StatusCollectors: []string{"per-wec"}}))
	if err := tp.its.reportFrom(context.Background(), "wds2", "u1", deploymentRef("shop", "web2"), deploymentStatus(2)); err != nil {
		t.Fatal(err)
	}
	b2 := &beside{t: t, s: wds2, procs: append(procs, procs2...)}
	b2.expectBinding("web2", "u1")
	b2.expectReturned("web2", 2, "1", "singletonstatus")
	// wds1's objects did not change: its manager reads only WorkStatuses labelled wds1.
	b.expectReturned("web", 1, "2", "multiwecstatus")
	// The chart's RBAC in the hosting cluster sufficed: no request of either manager was refused.
	for _, p := range []*process{procs[1], procs2[1]} {
		if b, err := os.ReadFile(p.log); err != nil || strings.Contains(strings.ToLower(string(b)), "forbidden") {
			t.Errorf("%s's log has a refused request (%v):\n%s", p.name, err, b)
		}
	}
	tp.hosting.assertOnlyKubeFlexRoles(t, wdsName)
	tp.uninstall(t, "wds2", procs2)
	t.Logf("topology test took %s", time.Since(start).Round(time.Millisecond))
}

// assertOnlyKubeFlexRoles: in the hosting cluster the release's ServiceAccount may do what a
// manager of a WDS of its own needs there (docs/install.md, "RBAC with KubeFlex") and nothing of
// what a manager needs in its WDS.
func (s *space) assertOnlyKubeFlexRoles(t *testing.T, wds string) {
	t.Helper()
	ns := wds + "-system"
	as := "--as=system:serviceaccount:" + ns + ":" + wds + "-statusfold-manager"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "controlplanes.tenancy.kflex.kubestellar.org", "--all-namespaces"}, "yes"},
		{[]string{"get", "secret/admin-kubeconfig", "-n", ns}, "yes"},
		{[]string{"get", "secret/vc-vcluster", "-n", itsName + "-system"}, "yes"},
		{[]string{"update", "secret/" + wds + "-statusfold-webhook-server-cert", "-n", ns}, "yes"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", ns}, "yes"},
		{[]string{"list", "secrets", "-n", ns}, "no"},
		{[]string{"get", "secret/other", "-n", ns}, "no"},
		{[]string{"list", "deployments.apps", "--all-namespaces"}, "no"},
		{[]string{"patch", "deployments.apps/status", "-n", "default"}, "no"},
		{[]string{"update", "validatingwebhookconfigurations", "--all-namespaces"}, "no"},
		{[]string{"create", "customresourcedefinitions", "--all-namespaces"}, "no"},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io", "--all-namespaces"}, "no"},
	} {
		out, _ := s.kubectl("", append([]string{"auth", "can-i", as}, c.args...)...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("in the hosting cluster, can %s %v? %q, want %s", as, c.args, got, c.want)
		}
	}
}

// startWDS runs KubeStellar's controller-manager for the WDS (its status controller off), waits
// for its CRDs in the WDS, installs the chart's release for the WDS and runs its manager, and
// waits until the manager registered admission in the WDS and is ready.
func (tp *topology) startWDS(name string) []*process {
	tp.t.Helper()
	ks := tp.startKubeStellar(name)
	tp.hosting.waitForLog(ks, "Starting controller", 2*time.Minute)
	_, p, err := net.SplitHostPort(freeAddrs(tp.t, 1)[0])
	if err != nil {
		tp.t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	tp.installStatusfold(name, port)
	sf := tp.startStatusfold(name)
	tp.hosting.waitForLog(sf, "admission registered in the WDS", 2*time.Minute)
	return []*process{ks, sf}
}

// applyRejected: kubectl apply of a bad StatusCollector to the WDS fails with its field paths.
func applyRejected(t *testing.T, wds *space) {
	t.Helper()
	out, err := wds.kubectl("", "apply", "-f", filepath.Join(repoRoot(), "test", "integration", "wdsadmission", "testdata", "bad-statuscollector.yaml"))
	if err == nil {
		t.Fatalf("the bad StatusCollector was admitted: %s", out)
	}
	for _, want := range []string{`spec.select: Forbidden`, `spec.filter: Invalid value`, `spec.combinedFields[0].subject: Required value: MAX needs a subject`} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl's error lacks %q:\n%s", want, out)
		}
	}
}

// topologyInputs: TestBesideKubeStellar's inputs, the WECs and their reports in the ITS, the
// workloads, collectors, ContentClassifier and BindingPolicies applied to the WDS with kubectl.
func topologyInputs(t *testing.T, tp *topology, wds *space) {
	t.Helper()
	for name, region := range map[string]string{"e1": "eu", "e2": "eu", "u1": "us"} {
		tp.its.addWEC(name, map[string]string{"region": region, "kscompat": "beside"})
	}
	cc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "ContentClassifier",
		"metadata": map[string]any{"name": "deployments.v1.apps"},
		"spec":     map[string]any{"dontPropagatePointers": []any{[]any{"status", "conditions"}}},
	}}
	wds.kubectlApply(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, deployment("shop", "web"), deployment("shop", "solo"),
		statusCollector("per-wec", sel("wec", "inventory.name"), sel("avail", "returned.status.availableReplicas"), sel("returned", "returned.status")),
		statusCollector("ready-sum", count("wecs"), agg("ready", aggSum, "returned.status.readyReplicas")), cc,
		bindingPolicy("web", map[string]string{"region": "eu", "kscompat": "beside"}, "apps", "deployments",
			map[string]string{"app": "web"}, ksv1alpha1.DownsyncModulation{WantMultiWECReportedState: true, StatusCollectors: []string{"per-wec", "ready-sum"}}),
		bindingPolicy("solo", map[string]string{"region": "us", "kscompat": "beside"}, "apps", "deployments",
			map[string]string{"app": "solo"}, ksv1alpha1.DownsyncModulation{WantSingletonReportedState: true, StatusCollectors: []string{"per-wec"}}))
	for _, r := range []struct {
		wec, name string
		ready     int64
	}{{"e1", "web", 3}, {"e2", "web", 1}, {"u1", "solo", 2}} {
		if err := tp.its.report(context.Background(), r.wec, deploymentRef("shop", r.name), deploymentStatus(r.ready)); err != nil {
			t.Fatal(err)
		}
	}
}

// kubectlApply applies objs to the space with kubectl, as JSON documents.
func (s *space) kubectlApply(t *testing.T, objs ...client.Object) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, s.c.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if out, err := s.kubectl(strings.Join(docs, "\n"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// uninstall runs docs/install.md's uninstall of the release for wds (its manager process stopped
// first, as Helm's deletion of the Deployment would): giveback, helm uninstall, and the deletion
// of the webhook configurations in the WDS; then a StatusCollector applies to the WDS unchecked.
func (tp *topology) uninstall(t *testing.T, wds string, procs []*process) {
	t.Helper()
	for _, p := range procs {
		if strings.HasPrefix(p.name, "statusfold-") {
			p.stop()
		}
	}
	h, w := tp.hosting, tp.wdses[wds]
	t.Log(h.statusfoldCLI("kubestellar", "giveback", "--wds-name", wds))
	h.helm("uninstall", wds, "-n", wds+"-system")
	for _, kind := range []string{"validating", "mutating"} {
		if out, err := w.kubectl("", "delete", kind+"webhookconfiguration", wds+"-statusfold-"+kind+"-webhook-configuration"); err != nil {
			t.Fatalf("deleting the %s configuration: %v\n%s", kind, err, out)
		}
	}
	w.kubectlApply(t, statusCollector("after-uninstall", count("wecs")))
}

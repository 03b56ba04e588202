package kscompat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// deploymentStatus is a WEC's reported Deployment status.
func deploymentStatus(ready int64) map[string]any {
	return map[string]any{
		"observedGeneration": int64(1), "replicas": int64(3), "updatedReplicas": int64(3),
		"readyReplicas": ready, "availableReplicas": ready,
		"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
			"lastTransitionTime": "2026-11-26T08:00:00Z", "lastUpdateTime": "2026-11-26T08:00:00Z"}},
	}
}

// TestBesideKubeStellar deploys statusfold the way a KubeStellar user would: KubeStellar's
// controller-manager with only its binding controller, statusfold in external binding mode. The
// Bindings KubeStellar writes drive statusfold's CombinedStatuses (with a ContentClassifier
// pruning the reported state), a singleton status return and a multi-WEC one.
func TestBesideKubeStellar(t *testing.T) {
	s := startSpace(t)
	ctx := context.Background()
	besideInputs(ctx, t, s)

	ks := s.startKubeStellar("binding")
	sf := s.startStatusfold()
	b := &beside{t: t, s: s, procs: []*process{ks, sf}}
	s.create(bindingPolicy("web", map[string]string{"region": "eu", "kscompat": "beside"}, "apps", "deployments",
		map[string]string{"app": "web"}, ksv1alpha1.DownsyncModulation{WantMultiWECReportedState: true,
			StatusCollectors: []string{"per-wec", "ready-sum"}}))
	s.create(bindingPolicy("solo", map[string]string{"region": "us", "kscompat": "beside"}, "apps", "deployments",
		map[string]string{"app": "solo"}, ksv1alpha1.DownsyncModulation{WantSingletonReportedState: true,
			StatusCollectors: []string{"per-wec"}}))

	// KubeStellar writes the Bindings; statusfold writes none of their spec.
	for name, dests := range map[string]string{"web": "e1 e2", "solo": "u1"} {
		b.expectBinding(name, dests)
	}

	// CombinedStatuses: one per (object, policy), by statusfold, from KubeStellar's Bindings, with
	// the conditions pruned by the ContentClassifier.
	b.expectCombinedStatus("web", "web", map[string]string{
		"per-wec":   fmt.Sprintf(`[wec avail returned] (String:"e1", Number:3, Object:%s) (String:"e2", Number:1, Object:%s)`, prunedJSON(3), prunedJSON(1)),
		"ready-sum": "[wecs ready] (Number:2, Number:4)",
	})
	b.expectCombinedStatus("solo", "solo", map[string]string{
		"per-wec": fmt.Sprintf(`[wec avail returned] (String:"u1", Number:2, Object:%s)`, prunedJSON(2)),
	})

	// Status return: the singleton copies u1's state, the multi-WEC object gets the aggregate
	// (readyReplicas: the minimum over e1 and e2), each with the number of executing WECs.
	// KubeStellar's label says which kind of return it is (docs/rules.md "Wire format").
	b.expectReturned("solo", 2, "1", "singletonstatus")
	b.expectReturned("web", 1, "2", "multiwecstatus")

	// An update of one WEC's WorkStatus flows through to both.
	if err := s.report(ctx, "e2", deploymentRef("shop", "web"), deploymentStatus(3)); err != nil {
		t.Fatal(err)
	}
	b.expectCombinedStatus("web", "web", map[string]string{
		"per-wec":   fmt.Sprintf(`[wec avail returned] (String:"e1", Number:3, Object:%s) (String:"e2", Number:3, Object:%s)`, prunedJSON(3), prunedJSON(3)),
		"ready-sum": "[wecs ready] (Number:2, Number:6)",
	})
	b.expectReturned("web", 3, "2", "multiwecstatus")
}

// besideInputs makes TestBesideKubeStellar's WECs (e1 and e2 in eu, u1 in us), Deployments
// (web, solo), collectors and ContentClassifier (pruning the conditions), and the WECs' reports.
func besideInputs(ctx context.Context, t *testing.T, s *space) {
	t.Helper()
	for name, region := range map[string]string{"e1": "eu", "e2": "eu", "u1": "us"} {
		s.addWEC(name, map[string]string{"region": region, "kscompat": "beside"})
	}
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	s.create(deployment("shop", "web"))
	s.create(deployment("shop", "solo"))
	s.create(statusCollector("per-wec", sel("wec", "inventory.name"), sel("avail", "returned.status.availableReplicas"),
		sel("returned", "returned.status")))
	s.create(statusCollector("ready-sum", count("wecs"), agg("ready", aggSum, "returned.status.readyReplicas")))
	cc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "ContentClassifier",
		"metadata": map[string]any{"name": "deployments.v1.apps"},
		"spec":     map[string]any{"dontPropagatePointers": []any{[]any{"status", "conditions"}}},
	}}
	s.create(cc)
	reports := []struct {
		wec, name string
		ready     int64
	}{{"e1", "web", 3}, {"e2", "web", 1}, {"u1", "solo", 2}}
	for _, r := range reports {
		if err := s.report(ctx, r.wec, deploymentRef("shop", r.name), deploymentStatus(r.ready)); err != nil {
			t.Fatal(err)
		}
	}
}

// prunedJSON is deploymentStatus(ready) without its conditions (the ContentClassifier prunes
// them), as JSON.
func prunedJSON(ready int64) string {
	st := deploymentStatus(ready)
	delete(st, "conditions")
	b, _ := json.Marshal(st)
	return string(b)
}

// beside is TestBesideKubeStellar's space and processes (KubeStellar's and statusfold's, whose
// logs a failed wait shows).
type beside struct {
	t     *testing.T
	s     *space
	procs []*process
}

// expectBinding waits until KubeStellar has written the Binding name with the destinations dests
// (space-separated) and one namespaced object, and statusfold wrote none of its spec.
func (b *beside) expectBinding(name, dests string) {
	b.t.Helper()
	b.s.eventually("Binding "+name+" from KubeStellar", 2*time.Minute, b.procs, func(ctx context.Context) (bool, string) {
		var bd ksv1alpha1.Binding
		if ok, err := b.s.get(ctx, client.ObjectKey{Name: name}, &bd); !ok {
			return false, fmt.Sprintf("no Binding (%v)", err)
		}
		var got []string
		for _, d := range bd.Spec.Destinations {
			got = append(got, d.ClusterId)
		}
		if strings.Join(got, " ") != dests || len(bd.Spec.Workload.NamespaceScope) != 1 {
			return false, fmt.Sprintf("destinations %v, %d namespaced objects", got, len(bd.Spec.Workload.NamespaceScope))
		}
		for _, mf := range bd.ManagedFields {
			if strings.Contains(mf.Manager, "statusfold") && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:spec"`) {
				return false, "statusfold wrote the Binding's spec (manager " + mf.Manager + ")"
			}
		}
		return true, ""
	})
}

// expectCombinedStatus waits until the CombinedStatus of (obj, policy) has exactly the results
// want (by name, as rowsText).
func (b *beside) expectCombinedStatus(obj, policy string, want map[string]string) {
	b.t.Helper()
	b.s.eventually("CombinedStatus of "+obj+" and "+policy, time.Minute, b.procs, func(ctx context.Context) (bool, string) {
		css, err := b.s.combinedStatuses(ctx, "shop")
		if err != nil {
			return false, err.Error()
		}
		cs := css[obj+"/"+policy]
		if cs == nil {
			return false, fmt.Sprintf("none; have %v", sortedKeys(css))
		}
		got := map[string]string{}
		for i := range cs.Results {
			got[cs.Results[i].Name] = rowsText(&cs.Results[i])
		}
		for name, w := range want {
			if got[name] != w {
				return false, fmt.Sprintf("result %s is %s, want %s", name, got[name], w)
			}
		}
		return len(got) == len(want), fmt.Sprintf("results %v", got)
	})
}

// expectReturned waits until the Deployment name shows ready ready and available replicas, the
// executing-count label wecs and KubeStellar's label of the return's kind (modeLabel).
func (b *beside) expectReturned(name string, ready int32, wecs, modeLabel string) {
	b.t.Helper()
	b.s.eventually("status of Deployment "+name, time.Minute, b.procs, func(ctx context.Context) (bool, string) {
		var d appsv1.Deployment
		if ok, err := b.s.get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &d); !ok {
			return false, fmt.Sprint(err)
		}
		if d.Status.ReadyReplicas != ready || d.Status.AvailableReplicas != ready || d.Labels["kubestellar.io/executing-count"] != wecs ||
			d.Labels["managed-by.kubestellar.io/"+modeLabel] != "true" {
			return false, fmt.Sprintf("readyReplicas %d, availableReplicas %d, labels %v", d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Labels)
		}
		return true, ""
	})
}

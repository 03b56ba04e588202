package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestStartWhileAggregatedAPIDown: a manager starts (a restart, or a new leader) while an
// aggregated API group that existing Bindings list is down, so its catalog has never seen the
// group. The Binding keeps its entries for the group (and the policy says why), the
// CombinedStatus and the returned status stay, the rest of the policy is still resolved, and
// everything converges when the group is back.
func TestStartWhileAggregatedAPIDown(t *testing.T) {
	const ns = "aggregated"
	cp, api, frontThing := boundThingAndConfigMap(t, ns)
	c := cp.Client

	// The group goes down while no manager runs, and the policy changes: the next start resolves it.
	api.stop()
	api.waitAvailable(cp, "False")
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.Downsync[0].StatusCollectors = []string{"count-wecs", "full-status"}
		bp.Spec.Downsync[1].StatusCollectors = []string{"count-wecs"}
	})
	objectErrors := reconcileResults(t, objectsController, "error")
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	// Barrier: the policies reconciler has resolved this generation (it writes the policy's
	// observedGeneration after the Binding). The ConfigMap's entry shows the change; the Thing's
	// entry is kept as it was.
	awaitResolved(t, c, ns)
	keptWhileDown(t, c, frontThing, ns, []string{"count-wecs"})
	expectEvent(t, c, "", ns, "DiscoveryFailed", frontGroup)

	// Barrier: the Thing's evaluation has failed (uncertain) at least once under this manager,
	// and a second resolution of the policy (another generation) ran; nothing was removed.
	eventually(t, "an evaluation of the objects controller failed (the Thing's, uncertain)", func() error {
		if n := reconcileResults(t, objectsController, "error"); n <= objectErrors {
			return fmt.Errorf("%v failed evaluations, as before the start", n)
		}
		return nil
	})
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.Downsync[1].StatusCollectors = []string{"count-wecs", "full-status"}
	})
	awaitResolved(t, c, ns)
	keptWhileDown(t, c, frontThing, ns, []string{"count-wecs", "full-status"})

	// Back: resolution proceeds for the group too, and the change made while it was down arrives.
	api.start()
	api.waitAvailable(cp, "True")
	eventually(t, "the Thing's entry resolved again", func() error {
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
			return err
		}
		for _, e := range b.Spec.Workload.NamespaceScope {
			if e.Group == frontGroup && !slices.Equal(e.StatusCollectors, []string{"count-wecs", "full-status"}) {
				return fmt.Errorf("the Thing's entry has collectors %v", e.StatusCollectors)
			}
		}
		return bindingKeeps(c, ns, []string{"count-wecs", "full-status"})
	})
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	eventually(t, "the full-status result", func() error {
		cs, err := combinedStatus(c, frontThing, ns, ns)
		if err != nil {
			return err
		}
		_, err = result(cs, "full-status")
		return err
	})
}

// boundThingAndConfigMap starts a control plane with the aggregated group up, a policy binding
// the Thing t1 (front group, with a return) and the ConfigMap cm1 of ns to wec1, and runs a first
// manager until the Binding, the CombinedStatus and the return are written. It returns the
// Thing as seen through the front group.
func boundThingAndConfigMap(t *testing.T, ns string) (*framework.ControlPlane, *aggregatedAPI, *unstructured.Unstructured) {
	t.Helper()
	cp, api := runAggregated(t, "wec1")
	c := cp.Client
	create(t, c, kubestellarDocCollectors()...)
	thing := customObject(t, c, thingGVK, ns, "t1")
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm1"}})
	create(t, c, policy(ns, []string{"wec1"},
		clause(frontGroup, "things", ns, []string{"t1"}, singleton, collectors("count-wecs")),
		clause("", "configmaps", ns, []string{"cm1"})))
	ref := controlv1alpha1.SourceRef{Group: frontGroup, Version: "v1", Resource: "things", Kind: "Thing", Namespace: ns, Name: "t1"}
	report(t, c, "wec1", ref, map[string]any{"phase": "Ready", "ready": int64(1)}, applied(1))
	frontThing := &unstructured.Unstructured{}
	frontThing.SetGroupVersionKind(schema.GroupVersionKind{Group: frontGroup, Version: "v1", Kind: "Thing"})
	frontThing.SetNamespace(ns)
	frontThing.SetName("t1")
	frontThing.SetUID(thing.GetUID())

	_, stop := startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	expectThing(t, c, "Ready", "1")
	eventually(t, "the Binding lists t1 and cm1", func() error { return bindingKeeps(c, ns, nil) })
	stop()
	return cp, api, frontThing
}

// keptWhileDown checks, once, that the Binding ns still lists the Thing (and cm1 with the
// collectors given), that the Thing's CombinedStatus exists and that its returned status is there.
func keptWhileDown(t *testing.T, c client.Client, frontThing *unstructured.Unstructured, ns string, cmCollectors []string) {
	t.Helper()
	if err := bindingKeeps(c, ns, cmCollectors); err != nil {
		t.Fatalf("while the aggregated API is down: %v", err)
	}
	if _, err := combinedStatus(c, frontThing, ns, ns); err != nil {
		t.Fatalf("CombinedStatus while the aggregated API is down: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(thingGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Ready" {
		t.Fatalf("returned status while the aggregated API is down: %v", u.Object["status"])
	}
}

// bindingKeeps checks that the Binding named lists the Thing t1 (front group) and the ConfigMap
// cm1, the latter with the collectors given (nil: any).
func bindingKeeps(c client.Client, name string, cmCollectors []string) error {
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &b); err != nil {
		return err
	}
	var thing, cm bool
	for _, e := range b.Spec.Workload.NamespaceScope {
		switch {
		case e.Group == frontGroup && e.Resource == "things" && e.Name == "t1":
			thing = true
		case e.Group == "" && e.Resource == "configmaps" && e.Name == "cm1":
			cm = cmCollectors == nil || slices.Equal(e.StatusCollectors, cmCollectors)
		}
	}
	if !thing || !cm {
		return fmt.Errorf("Binding %s lists %+v; want the Thing t1 and the ConfigMap cm1 (collectors %v)", name, b.Spec.Workload.NamespaceScope, cmCollectors)
	}
	return nil
}

// awaitResolved waits until the policies reconciler has handled the policy's current generation.
func awaitResolved(t *testing.T, c client.Client, name string) {
	t.Helper()
	eventually(t, "the policy's generation resolved", func() error {
		var bp controlv1alpha1.BindingPolicy
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bp); err != nil {
			return err
		}
		if bp.Status.ObservedGeneration != bp.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", bp.Status.ObservedGeneration, bp.Generation)
		}
		return nil
	})
}

// reconcileResults is controller_runtime_reconcile_total{controller, result} (process-wide).
func reconcileResults(t *testing.T, controller, res string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, "controller", controller) && hasLabel(m, "result", res) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// runAggregated starts a control plane with the aggregated group registered and serving, and
// the inventory objects of the WECs named (each labelled name=<WEC>).
func runAggregated(t *testing.T, wecs ...string) (*framework.ControlPlane, *aggregatedAPI) {
	t.Helper()
	cp := framework.RunControlPlane(t)
	api := newAggregatedAPI(t, cp)
	api.start()
	api.register(cp)
	for _, w := range wecs {
		addCluster(t, cp.Client, w, map[string]string{"name": w})
	}
	return cp, api
}

var thingGVK = schema.GroupVersionKind{Group: backendGroup, Version: "v1", Kind: "Thing"}

// TestAggregatedAPIDown: an aggregated API group goes down mid-run. Nothing of its objects is
// removed — no CombinedStatus, no returned status, no Binding entry — while it is down, and
// everything converges when it comes back.
func TestAggregatedAPIDown(t *testing.T) {
	// The Thing is one stored object under two resources (front.example.com through the proxy,
	// backend.example.com as the CRD). This test once failed by chance: the start-up sweep of
	// labelled objects found it under backend.example.com and removed the return written under
	// front.example.com (docs/controller.md "Failures"); TestSameObjectUnderTwoResources makes
	// that case happen every time.
	cp, api := runAggregated(t, "wec1", "wec2")
	c := cp.Client
	create(t, c, kubestellarDocCollectors()...)
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	const ns = "aggregated"
	thing := customObject(t, c, thingGVK, ns, "t1")
	ref := controlv1alpha1.SourceRef{Group: frontGroup, Version: "v1", Resource: "things", Kind: "Thing", Namespace: ns, Name: "t1"}
	create(t, c, policy(ns, []string{"wec1"}, clause(frontGroup, "things", ns, []string{"t1"}, singleton, collectors("count-wecs"))))
	report(t, c, "wec1", ref, map[string]any{"phase": "Ready", "ready": int64(1)}, applied(1))
	frontThing := &unstructured.Unstructured{}
	frontThing.SetGroupVersionKind(schema.GroupVersionKind{Group: frontGroup, Version: "v1", Kind: "Thing"})
	frontThing.SetNamespace(ns)
	frontThing.SetName("t1")
	frontThing.SetUID(thing.GetUID())
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	expectThing(t, c, "Ready", "1")

	// Down. Inputs keep changing while it is: a new report, a policy update (re-resolution),
	// and more than one catalog refresh.
	api.stop()
	api.waitAvailable(cp, "False")
	report(t, c, "wec1", ref, map[string]any{"phase": "Degraded", "ready": int64(0)}, applied(1))
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Labels = map[string]string{"touched": "yes"}
		bp.Spec.Downsync[0].StatusCollectors = []string{"count-wecs", "full-status"}
	})
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := combinedStatus(c, frontThing, ns, ns); err != nil {
			t.Fatalf("CombinedStatus while the aggregated API is down: %v", err)
		}
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Spec.Workload.NamespaceScope) != 1 {
			t.Fatalf("Binding while the aggregated API is down lists %d objects, want 1 (t1)", len(b.Spec.Workload.NamespaceScope))
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(thingGVK)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "" {
			mf, _ := json.Marshal(u.GetManagedFields())
			t.Fatalf("returned status removed while the aggregated API is down: %v; labels %v; managedFields %s", u.Object["status"], u.GetLabels(), mf)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Back: the report made while it was down, and the policy change, arrive.
	api.start()
	api.waitAvailable(cp, "True")
	expectThing(t, c, "Degraded", "0")
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	eventually(t, "the full-status result added while the API was down", func() error {
		cs, err := combinedStatus(c, frontThing, ns, ns)
		if err != nil {
			return err
		}
		r, err := result(cs, "full-status")
		if err != nil {
			return err
		}
		if len(r.Rows) != 1 || len(r.Rows[0].Columns) != 2 || r.Rows[0].Columns[0].String == nil || *r.Rows[0].Columns[0].String != "wec1" {
			return fmt.Errorf("rows %+v", r.Rows)
		}
		return nil
	})
}

// TestSameObjectUnderTwoResources: the Thing is bound under the CRD's group without a return and
// under the aggregated group with one. The evaluation under the CRD's group must leave the return
// alone — while both groups serve, and while the aggregated one is down (its watch's cache still
// shows the object with the same UID; a read that fails would make the evaluation retry).
func TestSameObjectUnderTwoResources(t *testing.T) {
	cp, api := runAggregated(t, "wec1")
	c := cp.Client
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	const ns = "aggregated"
	customObject(t, c, thingGVK, ns, "t1")
	ref := controlv1alpha1.SourceRef{Group: frontGroup, Version: "v1", Resource: "things", Kind: "Thing", Namespace: ns, Name: "t1"}
	create(t, c,
		policy("front", []string{"wec1"}, clause(frontGroup, "things", ns, []string{"t1"}, singleton)),
		policy("backend", []string{"wec1"}, clause(backendGroup, "things", ns, []string{"t1"})))
	report(t, c, "wec1", ref, map[string]any{"phase": "Ready", "ready": int64(1)}, applied(1))
	expectThing(t, c, "Ready", "1")
	eventually(t, "the backend Binding lists t1", func() error {
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: "backend"}, &b); err != nil {
			return err
		}
		if len(b.Spec.Workload.NamespaceScope) != 1 {
			return fmt.Errorf("Binding backend lists %d objects, want 1", len(b.Spec.Workload.NamespaceScope))
		}
		return nil
	})
	stays := func(phase string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(thingGVK)
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			if got != phase || u.GetLabels()[aggregator.LabelExecutingCount] != "1" {
				mf, _ := json.Marshal(u.GetManagedFields())
				t.Fatalf("returned status %v, labels %v: want phase %s and executing-count 1; managedFields %s", u.Object["status"], u.GetLabels(), phase, mf)
			}
		}
	}
	// A change of the object under either resource evaluates both keys.
	report(t, c, "wec1", ref, map[string]any{"phase": "Degraded", "ready": int64(0)}, applied(1))
	expectThing(t, c, "Degraded", "0")
	stays("Degraded")

	api.stop()
	api.waitAvailable(cp, "False")
	// The backend key is evaluated while the front group is down: a change of the Thing.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(thingGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(map[string]string{"touched": "while-down"})
	if err := c.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	stays("Degraded")
}

// expectThing waits until the Thing's status has the given phase and ready count.
func expectThing(t *testing.T, c client.Client, phase, ready string) {
	t.Helper()
	expectStatus(t, c, thingGVK, "aggregated", "t1", func(status map[string]any) error {
		if status["phase"] != phase || fmt.Sprint(status["ready"]) != ready {
			return fmt.Errorf("status %v, want phase %s ready %s", status, phase, ready)
		}
		return nil
	})
}

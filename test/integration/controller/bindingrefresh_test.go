package controller

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// testRefresh is the short Binding refresh delay (Options.VersionRefreshDelay) of these tests;
// statusfold's own status returns keep the default long one (a minute), longer than any test.
const testRefresh = 300 * time.Millisecond

// refreshBarrier is a second BindingPolicy, "timer", placing its own Deployment: an edit of that
// Deployment by another writer queues the timer policy's Binding refresh with the short delay,
// on the same policies queue (one worker, keys handed out in the order their delays end) as any
// refresh of the policy under test. So once the timer's Binding lists the edit, every refresh of
// the policy under test that was due no later — had a status return queued one with the short
// delay before the edit — has been written. It replaces a sleep of the delay with an event.
type refreshBarrier struct {
	t     *testing.T
	c     client.Client
	d     *appsv1.Deployment
	edits int
}

func newRefreshBarrier(t *testing.T, c client.Client, ns string) *refreshBarrier {
	t.Helper()
	d := deployment(t, c, ns, "timer", 1, nil)
	create(t, c, policy("timer", []string{"wec1"}, clause("apps", "deployments", ns, []string{"timer"})))
	return &refreshBarrier{t: t, c: c, d: d}
}

// pass edits the timer Deployment and waits until the timer's Binding lists its new version.
func (r *refreshBarrier) pass() {
	r.t.Helper()
	r.edits++
	annotate(r.t, r.c, r.d, "barrier", strconv.Itoa(r.edits))
	eventually(r.t, fmt.Sprintf("barrier %d: the timer's Binding lists the edit", r.edits), func() error {
		return bindingListsAt(r.c, "timer", r.d.Name, r.d.ResourceVersion)
	})
}

// bindingListsAt reports whether Binding name lists the object name at resourceVersion rv.
func bindingListsAt(c client.Client, name, object, rv string) error {
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &b); err != nil {
		return err
	}
	for _, o := range b.Spec.Workload.NamespaceScope {
		if o.Name == object && o.ResourceVersion == rv {
			return nil
		}
	}
	return fmt.Errorf("Binding %s lists %+v; want %s at %s", name, b.Spec.Workload.NamespaceScope, object, rv)
}

// getBinding reads Binding name.
func getBinding(t *testing.T, c client.Client, name string) *controlv1alpha1.Binding {
	t.Helper()
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

// TestStatusReturnDoesNotRewriteBinding: statusfold's own status returns change the workload
// object's resourceVersion, which its Binding lists; they are recorded after
// Options.OwnVersionRefreshDelay (a minute), not after the short delay of other updates, and a
// Binding write is not followed by a write of the Binding's status (its observedGeneration is
// KubeStellar's transport's field): docs/controller.md, "Bindings". With the earlier behaviour
// each return rewrote the Binding after the short delay, and each Binding write its status.
func TestStatusReturnDoesNotRewriteBinding(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	ns := "own-refresh"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy("own", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	barrier := newRefreshBarrier(t, c, ns)
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, d.Generation), applied(d.Generation))
	startManager(t, cp, aggregator.Options{VersionRefreshDelay: testRefresh})

	returned := func(ready int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("readyReplicas %d returned", ready), func() error {
			u, err := getObject(c, d, ns, "web")
			if err != nil {
				return err
			}
			if got, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); got != ready {
				return fmt.Errorf("readyReplicas %d", got)
			}
			return nil
		})
	}
	returned(1)
	// The Binding's condition was written with the Binding, without waiting for its echo.
	expectCollectorsCondition(t, c, "own", corev1.ConditionTrue, "")
	barrier.pass() // whatever the start queued with the short delay is written
	before := getBinding(t, c, "own")
	for _, ready := range []int64{2, 3, 1} {
		report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, ready, d.Generation), applied(d.Generation))
		returned(ready)
	}
	reconcileAgain(t, c, "own")
	barrier.pass()
	// Any write of the Binding or of its status gives it another resourceVersion.
	b := getBinding(t, c, "own")
	if b.ResourceVersion != before.ResourceVersion {
		t.Errorf("the Binding was written after statusfold's own status returns (generation %d → %d, resourceVersion %s → %s), within %s; "+
			"want neither it nor its status written (its condition did not change)",
			before.Generation, b.Generation, before.ResourceVersion, b.ResourceVersion, aggregator.DefaultOwnVersionRefreshDelay)
	}
	if b.Status.ObservedGeneration != 0 {
		t.Errorf("Binding status.observedGeneration %d: statusfold writes only its condition there", b.Status.ObservedGeneration)
	}
	expectEditRecorded(t, c, d, ns)
}

// expectEditRecorded: another writer's update of the object is recorded in the Binding "own"
// within the short delay.
func expectEditRecorded(t *testing.T, c client.Client, d *appsv1.Deployment, ns string) {
	t.Helper()
	annotate(t, c, d, "edited", "yes")
	eventually(t, "the Binding lists the edited object's resourceVersion", func() error {
		return bindingListsAt(c, "own", "web", d.ResourceVersion)
	})
}

// TestReturnLabelsDoNotRewriteBinding: the status-return labels statusfold puts on a workload
// object (kubestellar.io/executing-count and the singleton/multi-WEC label, written with its first
// return) cannot change which policies select the object unless a policy selects on them, so
// their change is recorded in the Binding as a status return's is (after the own delay, a
// minute), not by an immediate second Binding write. At 100 objects × 1,000 WECs each such write
// cost the apiserver ≈0.4 s, eight of them during the initial sync.
func TestReturnLabelsDoNotRewriteBinding(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	ns := "label-refresh"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy("lbl", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	barrier := newRefreshBarrier(t, c, ns)
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, d.Generation), applied(d.Generation))
	startManager(t, cp, aggregator.Options{VersionRefreshDelay: testRefresh})
	eventually(t, "the first return's labels", func() error {
		u, err := getObject(c, d, ns, "web")
		if err != nil {
			return err
		}
		if got := u.GetLabels()[aggregator.LabelExecutingCount]; got != "1" {
			return fmt.Errorf("executing-count %q", got)
		}
		return nil
	})
	expectCollectorsCondition(t, c, "lbl", corev1.ConditionTrue, "")
	reconcileAgain(t, c, "lbl")
	barrier.pass()
	// The Binding's spec was written once, when it was made (generation 1).
	if b := getBinding(t, c, "lbl"); b.Generation != 1 {
		t.Errorf("the Binding's spec was written again (generation %d): want it written once, not again for the return's labels within %s",
			b.Generation, aggregator.DefaultOwnVersionRefreshDelay)
	}
}

// reconcileAgain annotates BindingPolicy name, which queues its reconcile at once: a reconcile
// for another reason than the workload object's updates, before the barrier that follows. It
// must not record statusfold's own updates of the object sooner than their refresh would.
func reconcileAgain(t *testing.T, c client.Client, name string) {
	t.Helper()
	bp := &controlv1alpha1.BindingPolicy{}
	bp.Name = name
	annotate(t, c, bp, "reconcile", "again")
}

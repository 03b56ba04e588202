package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestRestartConverges stops the manager, changes WorkStatuses, inventory and policies while it
// is down, and checks that a new manager converges to the state those inputs call for.
func TestRestartConverges(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	f := newRestartFixture(t, c)

	_, stop := startManager(t, cp, aggregator.Options{})
	expectReturn(t, c, f.d, "2", 1)
	eventually(t, "ReplicaSet status returned", f.rsReturned(true, 2))
	expectResult(t, c, f.d, f.ns, f.ns, "available-replicas-histogram", [][]string{{"1", "1"}, {"3", "1"}})
	expectResult(t, c, f.gone, f.ns, f.ns, "count-wecs", [][]string{{"2"}})
	stop()

	goneCS := f.changeWhileDown()

	firstPass := make(chan struct{})
	startManager(t, cp, aggregator.Options{AfterFirstPass: sync.OnceFunc(func() { close(firstPass) })})
	expectReturn(t, c, f.d, "3", 2)
	expectResult(t, c, f.d, f.ns, f.ns, "available-replicas-histogram", [][]string{{"2", "1"}, {"3", "2"}})
	expectResult(t, c, f.d, f.ns, f.ns, "count-wecs", [][]string{{"3"}})
	eventually(t, "ReplicaSet's return cleared after its policy went", f.rsReturned(false, 0))
	eventually(t, "CombinedStatus of the object deleted while down is gone", func() error {
		var cs controlv1alpha1.CombinedStatus
		err := c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: goneCS.Name}, &cs)
		if err == nil {
			return errStillThere
		}
		return client.IgnoreNotFound(err)
	})
	// The restarted manager's first pass (every object the initial lists queued) is done.
	select {
	case <-firstPass:
	case <-time.After(30 * time.Second):
		t.Error("Options.AfterFirstPass was not called after the restart converged")
	}
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: f.ns}, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.Workload.NamespaceScope) != 1 || b.Spec.Workload.NamespaceScope[0].Name != "web" {
		t.Errorf("binding workload %+v, want only web", b.Spec.Workload.NamespaceScope)
	}
}

// restartFixture is TestRestartConverges's cluster: three WECs, two Deployments (web, gone)
// bound multi-WEC to wec1 and wec2 with two collectors, and a ReplicaSet (solo) returned from
// wec1 under a policy of its own.
type restartFixture struct {
	t       *testing.T
	c       client.Client
	ns      string
	d, gone *appsv1.Deployment
	rs      *appsv1.ReplicaSet
}

func newRestartFixture(t *testing.T, c client.Client) *restartFixture {
	t.Helper()
	for _, w := range []string{"wec1", "wec2", "wec3"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	create(t, c, kubestellarDocCollectors()...)
	f := &restartFixture{t: t, c: c, ns: "restart"}
	ns := f.ns
	f.d = deployment(t, c, ns, "web", 3, nil)
	f.gone = deployment(t, c, ns, "gone", 1, nil)
	create(t, c, policy(ns, []string{"wec1", "wec2"},
		clause("apps", "deployments", ns, []string{"web", "gone"}, multi, collectors("count-wecs", "available-replicas-histogram"))))
	for _, w := range []string{"wec1", "wec2"} {
		report(t, c, w, deploymentRef(f.d), deploymentStatus(3, readyOf[w], 1), applied(1))
	}
	// A ReplicaSet whose only policy is deleted while no manager runs.
	f.rs = replicaSet(t, c, ns, "solo", 2)
	create(t, c, policy("restart-solo", []string{"wec1"}, clause("apps", "replicasets", ns, []string{"solo"}, singleton)))
	rsRef := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "solo"}
	report(t, c, "wec1", rsRef, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1}, applied(1))
	return f
}

// rsReturned checks whether the ReplicaSet carries the executing-count label and readyReplicas.
func (f *restartFixture) rsReturned(wantLabel bool, wantReady int64) func() error {
	return func() error {
		u, err := getObject(f.c, f.rs, f.ns, "solo")
		if err != nil {
			return err
		}
		_, hasLabel := u.GetLabels()[aggregator.LabelExecutingCount]
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		if hasLabel != wantLabel || ready != wantReady {
			return fmt.Errorf("label present %v, readyReplicas %d", hasLabel, ready)
		}
		return nil
	}
}

// changeWhileDown changes the inputs while no manager runs: wec2 recovers, wec3 joins (by a
// policy change), one object goes, and the ReplicaSet's policy and its Binding go. It returns
// the CombinedStatus of the object that went.
func (f *restartFixture) changeWhileDown() *controlv1alpha1.CombinedStatus {
	t, c, ns := f.t, f.c, f.ns
	report(t, c, "wec2", deploymentRef(f.d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec3", deploymentRef(f.d), deploymentStatus(3, 2, 1), applied(1))
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.ClusterSelectors[0].MatchExpressions[0].Values = []string{"wec1", "wec2", "wec3"}
	})
	goneCS, err := combinedStatus(c, f.gone, ns, ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), f.gone); err != nil {
		t.Fatal(err)
	}
	// The policy and (as the garbage collector would) its Binding go.
	if err := c.Delete(context.Background(), &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "restart-solo"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "restart-solo"}}); err != nil {
		t.Fatal(err)
	}
	return goneCS
}

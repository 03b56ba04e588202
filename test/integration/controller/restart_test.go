package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
	for _, w := range []string{"wec1", "wec2", "wec3"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	create(t, c, kubestellarDocCollectors()...)
	ns := "restart"
	d := deployment(t, c, ns, "web", 3, nil)
	gone := deployment(t, c, ns, "gone", 1, nil)
	create(t, c, policy(ns, []string{"wec1", "wec2"},
		clause("apps", "deployments", ns, []string{"web", "gone"}, multi, collectors("count-wecs", "available-replicas-histogram"))))
	for _, w := range []string{"wec1", "wec2"} {
		report(t, c, w, deploymentRef(d), deploymentStatus(3, readyOf[w], 1), applied(1))
	}
	// A ReplicaSet whose only policy is deleted while no manager runs.
	rs := replicaSet(t, c, ns, "solo", 2)
	create(t, c, policy("restart-solo", []string{"wec1"}, clause("apps", "replicasets", ns, []string{"solo"}, singleton)))
	rsRef := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "solo"}
	report(t, c, "wec1", rsRef, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1}, applied(1))
	rsReturned := func(wantLabel bool, wantReady int64) func() error {
		return func() error {
			u, err := getObject(c, rs, ns, "solo")
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

	_, stop := startManager(t, cp, aggregator.Options{})
	expectReturn(t, c, d, "2", 1)
	eventually(t, "ReplicaSet status returned", rsReturned(true, 2))
	expectResult(t, c, d, ns, ns, "available-replicas-histogram", [][]string{{"1", "1"}, {"3", "1"}})
	expectResult(t, c, gone, ns, ns, "count-wecs", [][]string{{"2"}})
	stop()

	// While no manager runs: wec2 recovers, wec3 joins (by a policy change), one object goes.
	report(t, c, "wec2", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec3", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.ClusterSelectors[0].MatchExpressions[0].Values = []string{"wec1", "wec2", "wec3"}
	})
	goneCS, err := combinedStatus(c, gone, ns, ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	// The policy and (as the garbage collector would) its Binding go.
	if err := c.Delete(context.Background(), &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "restart-solo"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "restart-solo"}}); err != nil {
		t.Fatal(err)
	}

	firstPass := make(chan struct{})
	startManager(t, cp, aggregator.Options{AfterFirstPass: sync.OnceFunc(func() { close(firstPass) })})
	expectReturn(t, c, d, "3", 2)
	expectResult(t, c, d, ns, ns, "available-replicas-histogram", [][]string{{"2", "1"}, {"3", "2"}})
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"3"}})
	eventually(t, "ReplicaSet's return cleared after its policy went", rsReturned(false, 0))
	eventually(t, "CombinedStatus of the object deleted while down is gone", func() error {
		var cs controlv1alpha1.CombinedStatus
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: goneCS.Name}, &cs)
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
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.Workload.NamespaceScope) != 1 || b.Spec.Workload.NamespaceScope[0].Name != "web" {
		t.Errorf("binding workload %+v, want only web", b.Spec.Workload.NamespaceScope)
	}
}

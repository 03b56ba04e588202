package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

const configMaps = "/v1, Resource=configmaps"

// TestNamespaceScopedWatches: a policy that selects ConfigMaps in namespace A makes their
// informer hold A's ConfigMaps only; widening the policy to B picks up B's, narrowing back to A
// drops B's through the normal path (their CombinedStatuses go as they are no longer selected),
// and through it all nothing written for A's objects is removed: no Binding entry, no
// CombinedStatus, no returned status (docs/security.md, "Reads").
func TestNamespaceScopedWatches(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	agg, _ := startManager(t, cp, aggregator.Options{})
	create(t, c, kubestellarDocCollectors()...)
	a, b, other := "nsw-a", "nsw-b", "nsw-other"
	counts := map[string]int{a: 3, b: 2, other: 4}
	for _, ns := range []string{a, b, other} {
		ensureNamespace(t, c, ns)
		for i := range counts[ns] {
			create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm%d", i)}})
		}
	}
	d := deployment(t, c, a, "web", 3, nil)
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	gaps := watchForGaps(t, cp, a)

	bp := policy("nsw", []string{"wec1"}, clause("", "configmaps", a, nil, collectors("count-wecs")),
		clause("apps", "deployments", a, []string{"web"}, singleton))
	create(t, c, bp)
	expectReturn(t, c, d, "1", 2)
	cm0 := configMap(t, c, a, "cm0")
	uid := expectResult(t, c, cm0, "nsw", a, "count-wecs", [][]string{{"1"}}).UID
	expectWatched(t, agg, a, counts[a])
	expectBound(t, c, "nsw", a, counts[a])
	expectInformers(t, 0, 2) // ConfigMaps and Deployments, in A

	setNamespaces(t, c, "nsw", a, b)
	expectWatched(t, agg, a+","+b, counts[a]+counts[b])
	expectBound(t, c, "nsw", b, counts[b])
	expectResult(t, c, configMap(t, c, b, "cm1"), "nsw", b, "count-wecs", [][]string{{"1"}})

	setNamespaces(t, c, "nsw", a)
	expectWatched(t, agg, a, counts[a])
	expectBound(t, c, "nsw", b, 0)
	expectBound(t, c, "nsw", a, counts[a])
	eventually(t, "B's CombinedStatuses removed once B is no longer selected", func() error {
		var l controlv1alpha1.CombinedStatusList
		if err := c.List(context.Background(), &l, client.InNamespace(b)); err != nil || len(l.Items) != 0 {
			return fmt.Errorf("%d left (%v)", len(l.Items), err)
		}
		return nil
	})

	// Every namespace ("*"), then back to A: through the cluster-wide informer and out of it.
	setNamespaces(t, c, "nsw", "*")
	expectWatched(t, agg, "*", counts[a]+counts[b]+counts[other])
	expectInformers(t, 2, 0)
	setNamespaces(t, c, "nsw", a)
	expectWatched(t, agg, a, counts[a])
	expectBound(t, c, "nsw", a, counts[a])

	if got := expectResult(t, c, cm0, "nsw", a, "count-wecs", [][]string{{"1"}}).UID; got != uid {
		t.Errorf("A's CombinedStatus was recreated (uid %s, was %s)", got, uid)
	}
	expectReturn(t, c, d, "1", 2)
	if g := gaps(); len(g) > 0 {
		t.Errorf("written for A's objects, then removed: %v", g)
	}
}

// configMap reads a ConfigMap (with its UID, which names its CombinedStatuses).
func configMap(t *testing.T, c client.Client, ns, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// setNamespaces sets the namespaces of every clause of the policy (again on a conflict with
// statusfold's writes of its status).
func setNamespaces(t *testing.T, c client.Client, name string, namespaces ...string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var bp controlv1alpha1.BindingPolicy
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bp); err != nil {
			return err
		}
		for i := range bp.Spec.Downsync {
			bp.Spec.Downsync[i].Namespaces = namespaces
		}
		return c.Update(context.Background(), &bp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expectWatched waits until ConfigMaps are watched in scope and their informers hold n objects
// (at least n when watched cluster-wide: the apiserver keeps ConfigMaps of its own).
func expectWatched(t *testing.T, agg *aggregator.Aggregator, scope string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("ConfigMaps watched in %q, %d cached", scope, n), func() error {
		cached, err := agg.CachedObjects(context.Background(), configMaps)
		if got := agg.WatchedNamespaces()[configMaps]; err != nil || got != scope || cached != n && (scope != "*" || cached < n) {
			return fmt.Errorf("watched in %q, %d cached (%v)", got, cached, err)
		}
		return nil
	})
}

// expectInformers waits until statusfold_workload_informers says cluster informers watch
// cluster-wide and namespaced ones in single namespaces.
func expectInformers(t *testing.T, cluster, namespaced float64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%v cluster-wide and %v namespace informers", cluster, namespaced), func() error {
		mfs, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return err
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "statusfold_workload_informers" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						got[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		if got["cluster"] != cluster || got["namespace"] != namespaced {
			return fmt.Errorf("statusfold_workload_informers %v", got)
		}
		return nil
	})
}

// expectBound waits until the policy's Binding lists n ConfigMaps of namespace ns.
func expectBound(t *testing.T, c client.Client, name, ns string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("Binding %s lists %d ConfigMaps of %s", name, n, ns), func() error {
		var bdg controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bdg); err != nil {
			return err
		}
		got := 0
		for _, o := range bdg.Spec.Workload.NamespaceScope {
			if o.Resource == "configmaps" && o.Namespace == ns {
				got++
			}
		}
		if got != n {
			return fmt.Errorf("%d listed", got)
		}
		return nil
	})
}

// watchForGaps watches, until the test ends, what is written for the objects of namespace ns
// and returns what it saw removed after it was written: a CombinedStatus deleted, the
// Deployment's returned readyReplicas gone, a Binding entry of ns dropped while its policy
// still selects ns.
func watchForGaps(t *testing.T, cp *framework.ControlPlane, ns string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var gaps []string
	add := func(s string) { mu.Lock(); gaps = append(gaps, s); mu.Unlock() }
	follow := func(list client.ObjectList, opts []client.ListOption, check func(watch.Event)) {
		w, err := wc.Watch(ctx, list, opts...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for e := range w.ResultChan() {
				check(e)
			}
		}()
	}
	follow(&controlv1alpha1.CombinedStatusList{}, []client.ListOption{client.InNamespace(ns)}, func(e watch.Event) {
		if e.Type == watch.Deleted {
			add("CombinedStatus deleted")
		}
	})
	returned := false
	follow(&appsv1.DeploymentList{}, []client.ListOption{client.InNamespace(ns)}, func(e watch.Event) {
		d, ok := e.Object.(*appsv1.Deployment)
		if !ok {
			return
		}
		if d.Status.ReadyReplicas > 0 {
			returned = true
		} else if returned {
			add("returned status removed")
		}
	})
	had := 0
	follow(&controlv1alpha1.BindingList{}, nil, func(e watch.Event) {
		bdg, ok := e.Object.(*controlv1alpha1.Binding)
		if !ok || bdg.Name != "nsw" {
			return
		}
		n := len(slices.DeleteFunc(slices.Clone(bdg.Spec.Workload.NamespaceScope), func(o controlv1alpha1.NamespaceScopeDownsyncClause) bool {
			return o.Namespace != ns
		}))
		if n < had {
			add(fmt.Sprintf("Binding entries of %s dropped from %d to %d", ns, had, n))
		}
		had = max(had, n)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(gaps)
	}
}

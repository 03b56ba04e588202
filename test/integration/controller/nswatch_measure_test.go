package controller

import (
	"context"
	"fmt"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/internal/memtest"
	"github.com/statusfold/statusfold/test/framework"
)

// The size of TestMeasureNamespaceScopedWatches: namespaces, ConfigMaps in each, bytes of data in each.
const memNamespaces, memPerNamespace, memDataBytes = 20, 250, 1024

// TestMeasureNamespaceScopedWatches measures the manager's heap with a resource that has many
// objects in many namespaces and a policy that selects one namespace: ConfigMaps watched
// cluster-wide (--cluster-wide-watches) against watched in that namespace only, in the same
// run, alternating, three times each (docs/performance.md, "Memory"). For each it reports the
// peak heap growth from the manager's start until the policy's Binding lists the namespace's
// ConfigMaps (memtest.HeapGrowth), and the heap still held then, after a collection. It runs
// only with STATUSFOLD_MEASURE=1.
func TestMeasureNamespaceScopedWatches(t *testing.T) {
	if os.Getenv("STATUSFOLD_MEASURE") == "" {
		t.Skip("set STATUSFOLD_MEASURE=1 to run the memory measurement")
	}
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	fillConfigMaps(t, c)
	measure := func(clusterWide bool) (peak, held uint64) {
		var stop func()
		peak, _ = memtest.HeapGrowth(func() {
			base := liveHeap()
			var agg *aggregator.Aggregator
			agg, stop = startManager(t, cp, aggregator.Options{ClusterWideWatches: clusterWide})
			create(t, c, policy("mem", []string{"wec1"}, clause("", "configmaps", "mem-00", nil)))
			expectBound(t, c, "mem", "mem-00", memPerNamespace)
			if n, err := agg.CachedObjects(context.Background(), configMaps); err != nil || n < memPerNamespace {
				t.Fatalf("%d ConfigMaps cached (%v)", n, err)
			}
			held = max(liveHeap(), base) - base
		})
		stop()
		for _, o := range []client.Object{&controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "mem"}},
			&controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "mem"}}} {
			if err := c.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		return peak, held
	}
	measure(false) // warm-up: what the first manager of the process allocates once
	res := map[bool][][2]uint64{}
	for round := range 3 {
		for _, clusterWide := range []bool{round%2 == 0, round%2 != 0} {
			peak, held := measure(clusterWide)
			res[clusterWide] = append(res[clusterWide], [2]uint64{peak, held})
		}
	}
	for _, clusterWide := range []bool{true, false} {
		t.Logf("ConfigMaps watched %s: peak heap growth median %s, held %s (runs: %v)", map[bool]string{true: "cluster-wide", false: "in the one namespace"}[clusterWide],
			mib(medianBytes(res[clusterWide], 0)), mib(medianBytes(res[clusterWide], 1)), res[clusterWide])
	}
}

// fillConfigMaps creates memPerNamespace ConfigMaps in each of memNamespaces namespaces.
func fillConfigMaps(t *testing.T, c client.Client) {
	start, data := time.Now(), strings.Repeat("x", memDataBytes)
	var wg sync.WaitGroup
	errs := make(chan error, memNamespaces)
	for i := range memNamespaces {
		ns := fmt.Sprintf("mem-%02d", i)
		ensureNamespace(t, c, ns)
		wg.Go(func() {
			for j := range memPerNamespace {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%03d", j)}, Data: map[string]string{"d": data}}
				if err := c.Create(context.Background(), cm); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d ConfigMaps in %d namespaces created in %s", memNamespaces*memPerNamespace, memNamespaces, time.Since(start).Round(time.Millisecond))
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

func medianBytes(runs [][2]uint64, i int) uint64 {
	v := make([]uint64, 0, len(runs))
	for _, r := range runs {
		v = append(v, r[i])
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

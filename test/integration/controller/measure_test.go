package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestMeasureLatency is the quick latency check of docs/controller.md ("Measured"; what to
// expect: docs/performance.md, "Latency you can expect"): 100 simulated WECs × 10 objects, then
// WorkStatus updates, paced and in a burst. For every update it measures the time until the
// CombinedStatus reflects it, and the apiserver's own write→watch latency for the WorkStatus
// write, and it counts the CombinedStatus writes. It runs only with STATUSFOLD_MEASURE=1 (about
// a minute); STATUSFOLD_MEASURE_REPORT=FILE also writes the numbers as JSON.
func TestMeasureLatency(t *testing.T) {
	if os.Getenv("STATUSFOLD_MEASURE") == "" {
		t.Skip("set STATUSFOLD_MEASURE=1 to run the latency measurement")
	}
	const nWECs, nObjects, nUpdates = 100, 10, 240
	cp := framework.RunControlPlane(t)
	c := cp.Client
	ctx := context.Background()
	wecs := make([]string, nWECs)
	for i := range wecs {
		wecs[i] = fmt.Sprintf("w%03d", i)
		addCluster(t, c, wecs[i], map[string]string{"perf": "true"})
	}
	maxCol := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "perf-max"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
			{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
			{Name: "max", Type: controlv1alpha1.AggregatorTypeMax, Subject: expr("returned.status.availableReplicas")}}}}
	create(t, c, maxCol)
	ns := "perf"
	objs := make([]*appsv1.Deployment, nObjects)
	for i := range objs {
		objs[i] = deployment(t, c, ns, fmt.Sprintf("app%02d", i), 3, nil)
	}
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"perf": "true"}}}
	clause("apps", "deployments", ns, nil, collectors("perf-max"))(bp)
	create(t, c, bp)
	startManager(t, cp, aggregator.Options{CoalesceDelay: aggregator.DefaultCoalesceDelay}) // product defaults

	// Every WEC reports every object once.
	start := time.Now()
	type wsKey struct{ obj, wec int }
	workStatuses := map[wsKey]*controlv1alpha1.WorkStatus{}
	var mu sync.Mutex
	parallel(8, nObjects*nWECs, func(i int) {
		o, w := i/nWECs, i%nWECs
		report(t, c, wecs[w], deploymentRef(objs[o]), deploymentStatus(3, 1, 1), applied(1))
		var ws controlv1alpha1.WorkStatus
		name := fmt.Sprintf("deployments-%s-%s", ns, objs[o].Name)
		if err := c.Get(ctx, client.ObjectKey{Namespace: wecs[w], Name: name}, &ws); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		workStatuses[wsKey{o, w}] = &ws
		mu.Unlock()
	})
	for _, d := range objs {
		expectResult(t, c, d, ns, ns, "perf-max", [][]string{{"100", "1"}})
	}
	t.Logf("setup: %d WorkStatuses reported and %d CombinedStatuses converged in %s", nObjects*nWECs, nObjects, time.Since(start).Round(time.Millisecond))

	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	objIndex := map[string]int{}
	for i, d := range objs {
		objIndex[string(d.UID)] = i
	}

	value := 1000
	run := func(phase string, workers int, pace time.Duration) map[string]any {
		// Watch from now on (no initial ADDED events for existing objects).
		var cur controlv1alpha1.WorkStatusList
		if err := wc.List(ctx, &cur, client.Limit(1)); err != nil {
			t.Fatal(err)
		}
		from := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cur.ResourceVersion}}
		csWatch, err := wc.Watch(ctx, &controlv1alpha1.CombinedStatusList{}, client.InNamespace(ns), from)
		if err != nil {
			t.Fatal(err)
		}
		wsWatch, err := wc.Watch(ctx, &controlv1alpha1.WorkStatusList{}, client.MatchingLabels{controlv1alpha1.LabelOriginWDSName: wdsName}, from)
		if err != nil {
			t.Fatal(err)
		}
		type pendingUpdate struct {
			value int
			at    time.Time
		}
		var (
			pmu        sync.Mutex
			pending    = make([][]pendingUpdate, nObjects)
			wsSent     = map[string]time.Time{} // WorkStatus resourceVersion → write start
			wsSeen     = map[string]time.Time{} // resourceVersion → watch event arrival
			latencies  []float64
			watchLat   []float64
			csWrites   int
			maxSeen    = make([]int, nObjects)
			doneCh     = make(chan struct{})
			collectors sync.WaitGroup
			wsEvents   = map[watch.EventType]int{}
		)
		writesBefore := writeCount(t)
		collectors.Go(func() {
			for ev := range csWatch.ResultChan() {
				now := time.Now()
				cs, ok := ev.Object.(*controlv1alpha1.CombinedStatus)
				if !ok || ev.Type != watch.Modified {
					continue
				}
				o, ok := objIndex[string(cs.OwnerReferences[0].UID)]
				if !ok {
					continue
				}
				m := maxOf(cs)
				pmu.Lock()
				csWrites++
				if m > maxSeen[o] {
					maxSeen[o] = m
				}
				rest := pending[o][:0]
				for _, p := range pending[o] {
					if p.value <= m {
						latencies = append(latencies, now.Sub(p.at).Seconds())
					} else {
						rest = append(rest, p)
					}
				}
				pending[o] = rest
				pmu.Unlock()
			}
		})
		collectors.Go(func() {
			for ev := range wsWatch.ResultChan() {
				now := time.Now()
				wsEvents[ev.Type]++
				if ws, ok := ev.Object.(*controlv1alpha1.WorkStatus); ok && ev.Type == watch.Modified {
					pmu.Lock()
					wsSeen[ws.ResourceVersion] = now
					pmu.Unlock()
				}
			}
		})
		start := time.Now()
		var next int
		var nmu sync.Mutex
		parallel(workers, nUpdates, func(int) {
			nmu.Lock()
			u := next
			next++
			value++
			v := value
			nmu.Unlock()
			o, w := u%nObjects, (u*7+u/nObjects)%nWECs
			mu.Lock()
			ws := workStatuses[wsKey{o, w}].DeepCopy()
			mu.Unlock()
			raw, _ := json.Marshal(deploymentStatus(3, int64(v), 1))
			ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
			at := time.Now()
			pmu.Lock()
			pending[o] = append(pending[o], pendingUpdate{value: v, at: at})
			pmu.Unlock()
			if err := c.Status().Update(ctx, ws); err != nil {
				t.Errorf("update: %v", err)
				return
			}
			pmu.Lock()
			wsSent[ws.ResourceVersion] = at
			pmu.Unlock()
			mu.Lock()
			workStatuses[wsKey{o, w}] = ws
			mu.Unlock()
			if pace > 0 {
				time.Sleep(pace)
			}
		})
		sent := time.Since(start)
		eventually(t, phase+": every update reflected", func() error {
			pmu.Lock()
			defer pmu.Unlock()
			n := 0
			for _, p := range pending {
				n += len(p)
			}
			if n > 0 {
				return fmt.Errorf("%d updates not yet in a CombinedStatus", n)
			}
			return nil
		})
		time.Sleep(500 * time.Millisecond) // let trailing writes land before counting
		csWatch.Stop()
		wsWatch.Stop()
		collectors.Wait()
		close(doneCh)
		pmu.Lock()
		defer pmu.Unlock()
		for rv, at := range wsSent {
			if seen, ok := wsSeen[rv]; ok {
				watchLat = append(watchLat, seen.Sub(at).Seconds())
			}
		}
		res := map[string]any{
			"phase": phase, "updates": nUpdates, "workers": workers, "pace": pace.String(), "sendSeconds": sent.Seconds(),
			"updateToCombinedStatus": summary(latencies), "apiserverWriteToWatch": summary(watchLat),
			"combinedStatusWritesWatched": csWrites, "combinedStatusWritesByManager": writeCount(t) - writesBefore,
		}
		t.Logf("%s: WorkStatus watch events %v, writes recorded %d", phase, wsEvents, len(wsSent))
		t.Logf("%s: %d updates in %s: update→CombinedStatus %v; apiserver write→watch %v; CombinedStatus writes: %d watched, %v by the manager",
			phase, nUpdates, sent.Round(time.Millisecond), res["updateToCombinedStatus"], res["apiserverWriteToWatch"], csWrites, res["combinedStatusWritesByManager"])
		return res
	}
	report := []map[string]any{
		run("paced 20/s", 1, 50*time.Millisecond),
		run("burst", 8, 0),
	}
	if path := os.Getenv("STATUSFOLD_MEASURE_REPORT"); path != "" {
		b, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(workers, n int, f func(i int)) {
	var wg sync.WaitGroup
	ch := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range ch {
				f(i)
			}
		})
	}
	for i := range n {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

// maxOf reads the "max" column of the perf-max result.
func maxOf(cs *controlv1alpha1.CombinedStatus) int {
	r, err := result(cs, "perf-max")
	if err != nil || len(r.Rows) == 0 {
		return 0
	}
	for i, name := range r.ColumnNames {
		if name == "max" && r.Rows[0].Columns[i].Number != nil {
			v, _ := strconv.ParseFloat(*r.Rows[0].Columns[i].Number, 64)
			return int(v)
		}
	}
	return 0
}

// summary is the median, p99 and max of samples, in milliseconds.
func summary(samples []float64) map[string]any {
	if len(samples) == 0 {
		return map[string]any{"n": 0}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return math.Round(s[max(i, 0)]*1e4) / 10
	}
	return map[string]any{"n": len(s), "medianMs": q(0.5), "p99Ms": q(0.99), "maxMs": q(1)}
}

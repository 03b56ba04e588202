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
	f := newLatencyFixture(t)
	start := time.Now()
	f.reportAll()
	t.Logf("setup: %d WorkStatuses reported and %d CombinedStatuses converged in %s", measureObjects*measureWECs, measureObjects, time.Since(start).Round(time.Millisecond))
	report := []map[string]any{
		f.run("paced 20/s", 1, 50*time.Millisecond),
		f.run("burst", 8, 0),
	}
	if path := os.Getenv("STATUSFOLD_MEASURE_REPORT"); path != "" {
		b, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The size of TestMeasureLatency: WECs, objects, and updates per phase.
const measureWECs, measureObjects, measureUpdates = 100, 10, 240

// measureNamespace holds TestMeasureLatency's objects; its BindingPolicy has the same name.
const measureNamespace = "perf"

// latencyFixture is TestMeasureLatency's cluster: measureWECs WECs, measureObjects Deployments
// bound to all of them with a COUNT+MAX collector, the manager with the product's defaults, and
// every WorkStatus as last written.
type latencyFixture struct {
	t        *testing.T
	c        client.Client
	wc       client.WithWatch
	wecs     []string
	objs     []*appsv1.Deployment
	objIndex map[string]int // object UID → index in objs
	value    int            // the last value reported (availableReplicas), growing

	mu           sync.Mutex
	workStatuses map[wsKey]*controlv1alpha1.WorkStatus
}

// wsKey names the WorkStatus of object obj from WEC wec (indexes).
type wsKey struct{ obj, wec int }

func newLatencyFixture(t *testing.T) *latencyFixture {
	t.Helper()
	cp := framework.RunControlPlane(t)
	c := cp.Client
	f := &latencyFixture{t: t, c: c, objIndex: map[string]int{}, value: 1000, workStatuses: map[wsKey]*controlv1alpha1.WorkStatus{}}
	f.wecs = make([]string, measureWECs)
	for i := range f.wecs {
		f.wecs[i] = fmt.Sprintf("w%03d", i)
		addCluster(t, c, f.wecs[i], map[string]string{"perf": "true"})
	}
	maxCol := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "perf-max"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
			{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
			{Name: "max", Type: controlv1alpha1.AggregatorTypeMax, Subject: expr("returned.status.availableReplicas")}}}}
	create(t, c, maxCol)
	f.objs = make([]*appsv1.Deployment, measureObjects)
	for i := range f.objs {
		f.objs[i] = deployment(t, c, measureNamespace, fmt.Sprintf("app%02d", i), 3, nil)
		f.objIndex[string(f.objs[i].UID)] = i
	}
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: measureNamespace}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"perf": "true"}}}
	clause("apps", "deployments", measureNamespace, nil, collectors("perf-max"))(bp)
	create(t, c, bp)
	startManager(t, cp, aggregator.Options{CoalesceDelay: aggregator.DefaultCoalesceDelay}) // product defaults
	wc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f.wc = wc
	return f
}

// reportAll has every WEC report every object once, and waits until every CombinedStatus counts
// them all.
func (f *latencyFixture) reportAll() {
	t, c, ns := f.t, f.c, measureNamespace
	parallel(8, measureObjects*measureWECs, func(i int) {
		o, w := i/measureWECs, i%measureWECs
		report(t, c, f.wecs[w], deploymentRef(f.objs[o]), deploymentStatus(3, 1, 1), applied(1))
		var ws controlv1alpha1.WorkStatus
		name := fmt.Sprintf("deployments-%s-%s", ns, f.objs[o].Name)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: f.wecs[w], Name: name}, &ws); err != nil {
			t.Error(err)
			return
		}
		f.mu.Lock()
		f.workStatuses[wsKey{o, w}] = &ws
		f.mu.Unlock()
	})
	for _, d := range f.objs {
		expectResult(t, c, d, ns, ns, "perf-max", [][]string{{"100", "1"}})
	}
}

// pendingUpdate is an update not yet reflected in its object's CombinedStatus: the value it
// reported and when it was sent.
type pendingUpdate struct {
	value int
	at    time.Time
}

// latencyRun is what one phase of TestMeasureLatency records, from its updates and from its
// watches of CombinedStatuses and WorkStatuses.
type latencyRun struct {
	mu        sync.Mutex
	pending   [][]pendingUpdate    // by object
	wsSent    map[string]time.Time // WorkStatus resourceVersion → write start
	wsSeen    map[string]time.Time // resourceVersion → watch event arrival
	latencies []float64            // update → CombinedStatus, seconds
	csWrites  int                  // CombinedStatus writes watched
	maxSeen   []int                // by object
	wsEvents  map[watch.EventType]int
}

// run sends measureUpdates updates on workers goroutines, each worker pausing pace after each,
// waits until every update is reflected, and returns the phase's figures.
func (f *latencyFixture) run(phase string, workers int, pace time.Duration) map[string]any {
	t := f.t
	r := &latencyRun{pending: make([][]pendingUpdate, measureObjects), wsSent: map[string]time.Time{}, wsSeen: map[string]time.Time{},
		maxSeen: make([]int, measureObjects), wsEvents: map[watch.EventType]int{}}
	csWatch, wsWatch := f.watchFromNow()
	writesBefore := writeCount(t)
	var watchers sync.WaitGroup
	watchers.Go(func() { f.recordCombinedStatuses(r, csWatch) })
	watchers.Go(func() { recordWorkStatuses(r, wsWatch) })
	start := time.Now()
	f.sendUpdates(r, workers, pace)
	sent := time.Since(start)
	eventually(t, phase+": every update reflected", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, p := range r.pending {
			n += len(p)
		}
		if n > 0 {
			return fmt.Errorf("%d updates not yet in a CombinedStatus", n)
		}
		return nil
	})
	// Every evaluation that started has ended, so its writes are counted.
	evaluationsSettled(t, "object", objectsController)
	csWatch.Stop()
	wsWatch.Stop()
	watchers.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var watchLat []float64
	for rv, at := range r.wsSent {
		if seen, ok := r.wsSeen[rv]; ok {
			watchLat = append(watchLat, seen.Sub(at).Seconds())
		}
	}
	res := map[string]any{
		"phase": phase, "updates": measureUpdates, "workers": workers, "pace": pace.String(), "sendSeconds": sent.Seconds(),
		"updateToCombinedStatus": summary(r.latencies), "apiserverWriteToWatch": summary(watchLat),
		"combinedStatusWritesWatched": r.csWrites, "combinedStatusWritesByManager": writeCount(t) - writesBefore,
	}
	t.Logf("%s: WorkStatus watch events %v, writes recorded %d", phase, r.wsEvents, len(r.wsSent))
	t.Logf("%s: %d updates in %s: update→CombinedStatus %v; apiserver write→watch %v; CombinedStatus writes: %d watched, %v by the manager",
		phase, measureUpdates, sent.Round(time.Millisecond), res["updateToCombinedStatus"], res["apiserverWriteToWatch"], r.csWrites, res["combinedStatusWritesByManager"])
	return res
}

// watchFromNow starts the watches of the fixture's CombinedStatuses and WorkStatuses at the
// current resourceVersion (no initial ADDED events for existing objects).
func (f *latencyFixture) watchFromNow() (csWatch, wsWatch watch.Interface) {
	t, ctx := f.t, context.Background()
	var cur controlv1alpha1.WorkStatusList
	if err := f.wc.List(ctx, &cur, client.Limit(1)); err != nil {
		t.Fatal(err)
	}
	from := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cur.ResourceVersion}}
	csWatch, err := f.wc.Watch(ctx, &controlv1alpha1.CombinedStatusList{}, client.InNamespace(measureNamespace), from)
	if err != nil {
		t.Fatal(err)
	}
	wsWatch, err = f.wc.Watch(ctx, &controlv1alpha1.WorkStatusList{}, client.MatchingLabels{controlv1alpha1.LabelOriginWDSName: wdsName}, from)
	if err != nil {
		t.Fatal(err)
	}
	return csWatch, wsWatch
}

// recordCombinedStatuses counts the CombinedStatus writes that w delivers and, for every update
// that a write reflects (its value at most the write's max), records its latency.
func (f *latencyFixture) recordCombinedStatuses(r *latencyRun, w watch.Interface) {
	for ev := range w.ResultChan() {
		now := time.Now()
		cs, ok := ev.Object.(*controlv1alpha1.CombinedStatus)
		if !ok || ev.Type != watch.Modified {
			continue
		}
		o, ok := f.objIndex[string(cs.OwnerReferences[0].UID)]
		if !ok {
			continue
		}
		m := maxOf(cs)
		r.mu.Lock()
		r.csWrites++
		if m > r.maxSeen[o] {
			r.maxSeen[o] = m
		}
		rest := r.pending[o][:0]
		for _, p := range r.pending[o] {
			if p.value <= m {
				r.latencies = append(r.latencies, now.Sub(p.at).Seconds())
			} else {
				rest = append(rest, p)
			}
		}
		r.pending[o] = rest
		r.mu.Unlock()
	}
}

// recordWorkStatuses records when each WorkStatus update's watch event arrives.
func recordWorkStatuses(r *latencyRun, w watch.Interface) {
	for ev := range w.ResultChan() {
		now := time.Now()
		r.wsEvents[ev.Type]++
		if ws, ok := ev.Object.(*controlv1alpha1.WorkStatus); ok && ev.Type == watch.Modified {
			r.mu.Lock()
			r.wsSeen[ws.ResourceVersion] = now
			r.mu.Unlock()
		}
	}
}

// sendUpdates writes measureUpdates WorkStatus updates (each a new, larger availableReplicas) on
// workers goroutines, each pausing pace after each write: the pace is what a phase measures
// under.
func (f *latencyFixture) sendUpdates(r *latencyRun, workers int, pace time.Duration) {
	t, ctx := f.t, context.Background()
	var next int
	var nmu sync.Mutex
	parallel(workers, measureUpdates, func(int) {
		nmu.Lock()
		u := next
		next++
		f.value++
		v := f.value
		nmu.Unlock()
		o, w := u%measureObjects, (u*7+u/measureObjects)%measureWECs
		f.mu.Lock()
		ws := f.workStatuses[wsKey{o, w}].DeepCopy()
		f.mu.Unlock()
		raw, _ := json.Marshal(deploymentStatus(3, int64(v), 1))
		ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
		at := time.Now()
		r.mu.Lock()
		r.pending[o] = append(r.pending[o], pendingUpdate{value: v, at: at})
		r.mu.Unlock()
		if err := f.c.Status().Update(ctx, ws); err != nil {
			t.Errorf("update: %v", err)
			return
		}
		r.mu.Lock()
		r.wsSent[ws.ResourceVersion] = at
		r.mu.Unlock()
		f.mu.Lock()
		f.workStatuses[wsKey{o, w}] = ws
		f.mu.Unlock()
		if pace > 0 {
			time.Sleep(pace) // the phase's pace: the updates are spread out on purpose
		}
	})
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

package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// StatusfoldConfig sizes the statusfold part.
type StatusfoldConfig struct {
	// Updates are written at Rate per second for the latency measurement.
	Updates int
	Rate    float64
	// MaxRateFor is how long the writers write as fast as they can for the sustained rate.
	MaxRateFor time.Duration
	// Settle bounds the wait for statusfold to reflect every write of a phase.
	Settle time.Duration
	// ProfileDir receives cpu.pprof and heap.pprof.
	ProfileDir string
	Seed       uint64
	// APIServerPID is the kube-apiserver's process, for its CPU time; 0: not measured.
	APIServerPID int
	// APIServerProfile, when set, reaches an apiserver started with --profiling: its CPU
	// profile over the paced phase goes to ProfileDir/apiserver-cpu.pprof.
	APIServerProfile *rest.Config
}

// pendingWrite is a write not yet reflected downstream.
type pendingWrite struct {
	seq  int64
	sent time.Time
}

// tracker matches writes to the downstream objects that reflect them. Per object it keeps the
// writes not yet reflected, in sequence order; a downstream object showing sequence number m
// reflects every write of that object up to m.
type tracker struct {
	mu          sync.Mutex
	pending     [][]pendingWrite
	seen        []int64 // per object, the largest sequence number seen downstream
	lat         []time.Duration
	lastReflect time.Time
}

func newTracker(objects int) *tracker {
	return &tracker{pending: make([][]pendingWrite, objects), seen: make([]int64, objects)}
}

func (t *tracker) add(j int, seq int64, sent time.Time) {
	t.mu.Lock()
	t.pending[j] = append(t.pending[j], pendingWrite{seq, sent})
	t.mu.Unlock()
}

func (t *tracker) reflect(j int, upto int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if upto > t.seen[j] {
		t.seen[j] = upto
	}
	p := t.pending[j]
	k := 0
	for k < len(p) && p[k].seq <= upto {
		t.lat = append(t.lat, now.Sub(p[k].sent))
		k++
	}
	if k > 0 {
		t.pending[j] = p[k:]
		t.lastReflect = now
	}
}

// outstanding is the number of writes not yet reflected.
func (t *tracker) outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.pending {
		n += len(p)
	}
	return n
}

// take returns the latencies recorded since the last take, and the time of the last reflection.
func (t *tracker) take() ([]time.Duration, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lat
	t.lat = nil
	return l, t.lastReflect
}

// caughtUp says whether every object's downstream sequence number is at least want(j).
func (t *tracker) caughtUp(objects []int, want func(int) int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range objects {
		if t.seen[j] < want(j) {
			return false
		}
	}
	return true
}

// settle waits until nothing is outstanding or the timeout passes.
func (t *tracker) settle(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return t.outstanding() == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%d writes not reflected after %s", t.outstanding(), timeout)
	}
	return err
}

// objectIndex parses "app-0042".
func objectIndex(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "app-"))
	return n, err == nil && strings.HasPrefix(name, "app-")
}

// markerOf returns the marker collector's value in a CombinedStatus.
func markerOf(u *unstructured.Unstructured) (int64, bool) {
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	for _, r := range results {
		rm, _ := r.(map[string]any)
		if rm["name"] != MarkerCollector {
			continue
		}
		rows, _ := rm["rows"].([]any)
		if len(rows) == 0 {
			return 0, false
		}
		cols, _, _ := unstructured.NestedSlice(rows[0].(map[string]any), "columns")
		if len(cols) == 0 {
			return 0, false
		}
		num, _ := cols[0].(map[string]any)["float"].(string)
		f, err := strconv.ParseFloat(num, 64)
		return int64(f), err == nil
	}
	return 0, false
}

// returnedSeqOf returns the sequence number in a Deployment's returned status.
func returnedSeqOf(u *unstructured.Unstructured) (int64, bool) { return SeqOf(u.Object) }

// follow watches a resource in the object namespace from now on and calls fn for every added
// or modified object, re-watching when the server closes the watch.
func follow(ctx context.Context, ri dynamic.ResourceInterface, fn func(*unstructured.Unstructured, time.Time)) error {
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range list.Items {
		fn(&list.Items[i], now)
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			wi, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					fn(u, time.Now())
				}
			}
			wi.Stop()
		}
	}()
	return nil
}

// RunStatusfold starts the manager on a populated fixture and measures it.
func RunStatusfold(ctx context.Context, f *Fixture, mgr *ManagerProcess, sc StatusfoldConfig, logf func(string, ...any)) (*StatusfoldResult, error) {
	res := &StatusfoldResult{}
	cs := newTracker(f.Objects)
	ret := newTracker(f.Objects)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	err := follow(watchCtx, f.dyn.Resource(combinedStatusGVR).Namespace(ObjectNamespace), func(u *unstructured.Unstructured, now time.Time) {
		j, ok := objectIndex(u.GetLabels()[controlv1alpha1.LabelCombinedStatusName])
		if m, ok2 := markerOf(u); ok && ok2 && j < f.Objects {
			cs.reflect(j, m, now)
		}
	})
	if err != nil {
		return nil, err
	}
	err = follow(watchCtx, f.dyn.Resource(deploymentGVR).Namespace(ObjectNamespace), func(u *unstructured.Unstructured, now time.Time) {
		j, ok := objectIndex(u.GetName())
		if m, ok2 := returnedSeqOf(u); ok && ok2 && j < f.Objects {
			ret.reflect(j, m, now)
		}
	})
	if err != nil {
		return nil, err
	}

	// Initial sync: the manager was started after the fixture was populated.
	all := make([]int, f.Objects)
	var multi []int
	for j := range all {
		all[j] = j
		if f.IsMulti(j) {
			multi = append(multi, j)
		}
	}
	start := mgr.Started
	for !cs.caughtUp(all, f.MaxSeq) || !ret.caughtUp(multi, f.MaxSeq) {
		if time.Since(start) > sc.Settle {
			return nil, fmt.Errorf("initial sync not done after %s", sc.Settle)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.InitialSync = time.Since(start)
	logf("statusfold: initial sync of %d WorkStatuses took %s", f.WECs*f.Objects, res.InitialSync.Round(time.Millisecond))
	cs.take()
	ret.take()

	f.writer.onSend = func(tg target, seq int64, sent time.Time) {
		cs.add(tg.idx, seq, sent)
		if f.IsMulti(tg.idx) {
			ret.add(tg.idx, seq, sent)
		}
	}
	defer func() { f.writer.onSend = nil }()
	rng := rand.New(rand.NewPCG(sc.Seed, 1))
	var rngMu sync.Mutex
	pick := func() (int, int, int64) {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(f.WECs), rng.IntN(f.Objects), int64(rng.IntN(4))
	}

	// Paced phase: latency at a set rate.
	before, err := mgr.sample()
	if err != nil {
		return nil, err
	}
	apiCPU := startCPU(sc.APIServerPID)
	apiProf := make(chan error, 1)
	if sc.APIServerProfile != nil {
		secs := max(min(int(float64(sc.Updates)/sc.Rate), 60), 1)
		go func() {
			apiProf <- fetchAPIServerProfile(ctx, sc.APIServerProfile, secs, filepath.Join(sc.ProfileDir, "apiserver-cpu.pprof"))
		}()
	} else {
		apiProf <- nil
	}
	err = f.writer.paced(ctx, sc.Updates, sc.Rate, func(ctx context.Context, _ int) error {
		i, j, ready := pick()
		_, _, err := f.Write(ctx, i, j, ready)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("paced updates: %w", err)
	}
	if err := cs.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("CombinedStatus: %w", err)
	}
	if err := ret.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("returned status: %w", err)
	}
	after, err := mgr.sample()
	if err != nil {
		return nil, err
	}
	csLat, _ := cs.take()
	retLat, _ := ret.take()
	res.CombinedStatus = Summarize(csLat)
	res.Returned = Summarize(retLat)
	res.WritesPerUpdate = (after.writes - before.writes) / float64(sc.Updates)
	res.CPUSeconds = (after.proc.CPU - before.proc.CPU).Seconds()
	res.CPUPerUpdate = (after.proc.CPU - before.proc.CPU) / time.Duration(sc.Updates)
	res.APIServerCPUPerUpdate = apiCPU.per(sc.Updates)
	if err := <-apiProf; err != nil {
		logf("apiserver CPU profile: %v", err)
	}
	logf("statusfold: %d updates at %.0f/s: write→CombinedStatus %s; write→returned %s; %.2f writes and %s CPU per update; apiserver CPU %s per update",
		sc.Updates, sc.Rate, res.CombinedStatus, res.Returned, res.WritesPerUpdate, res.CPUPerUpdate, res.APIServerCPUPerUpdate)

	// Maximum rate: as fast as the writers can, with a CPU profile of the manager meanwhile.
	profDone := make(chan error, 1)
	go func() {
		secs := max(int(sc.MaxRateFor/time.Second), 1)
		profDone <- fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", mgr.PprofAddr, secs), filepath.Join(sc.ProfileDir, "cpu.pprof"))
	}()
	var n int
	var nMu sync.Mutex
	start = time.Now()
	err = f.writer.until(ctx, start.Add(sc.MaxRateFor), func(ctx context.Context) error {
		i, j, ready := pick()
		if _, _, err := f.Write(ctx, i, j, ready); err != nil {
			return err
		}
		nMu.Lock()
		n++
		nMu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("max-rate updates: %w", err)
	}
	written := time.Since(start)
	if err := cs.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("CombinedStatus at max rate: %w", err)
	}
	if err := ret.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("returned status at max rate: %w", err)
	}
	csLat, csLast := cs.take()
	ret.take()
	elapsed := max(csLast.Sub(start), written)
	res.SustainedRate = float64(n) / elapsed.Seconds()
	logf("statusfold: %d updates written in %s (%.0f/s), all reflected after %s: sustained %.0f/s; latency at that rate %s",
		n, written.Round(time.Millisecond), float64(n)/written.Seconds(), elapsed.Round(time.Millisecond), res.SustainedRate, Summarize(csLat))
	if err := <-profDone; err != nil {
		logf("CPU profile: %v", err)
	}

	// Memory: peak RSS, and the heap split between informers and statusfold's own caches.
	st, err := ReadProcStat(mgr.Cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.PeakRSS = st.PeakRSS
	res.BytesPerWorkStatus = float64(st.PeakRSS) / float64(f.WECs*f.Objects)
	heap := filepath.Join(sc.ProfileDir, "heap.pprof")
	if err := fetch("http://"+mgr.PprofAddr+"/debug/pprof/heap?gc=1", heap); err != nil {
		logf("heap profile: %v", err)
	} else if split, err := SplitHeap(heap); err != nil {
		logf("heap profile: %v", err)
	} else {
		res.HeapInuse, res.InformerBytes, res.CacheBytes = split.Total, split.Informers, split.Statusfold
	}
	if _, err := os.Stat(filepath.Join(sc.ProfileDir, "cpu.pprof")); err == nil {
		if top, err := TopFunctions(filepath.Join(sc.ProfileDir, "cpu.pprof"), 15); err == nil {
			res.HotSpots = top
		}
	}
	return res, nil
}

// managerSample is the manager's counters at one time.
type managerSample struct {
	writes float64
	proc   ProcStat
}

func (m *ManagerProcess) sample() (managerSample, error) {
	var s managerSample
	mv, err := ScrapeMetrics(m.MetricsAddr, "statusfold_writes_total")
	if err != nil {
		return s, err
	}
	s.writes = mv["statusfold_writes_total"]
	s.proc, err = ReadProcStat(m.Cmd.Process.Pid)
	return s, err
}

// fetchAPIServerProfile writes the apiserver's CPU profile over the next secs seconds to path.
func fetchAPIServerProfile(ctx context.Context, cfg *rest.Config, secs int, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(secs)).
		Timeout(time.Duration(secs+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

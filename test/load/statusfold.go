package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// StatusfoldConfig sizes the statusfold phases.
type StatusfoldConfig struct {
	// L1Updates are written at L1Rate per second.
	L1Updates int
	L1Rate    float64
	// L2For is how long the writers write as fast as they can; Window the length of the
	// staleness windows it is cut into.
	L2For, Window time.Duration
	// Settle bounds the wait for statusfold to reflect every write of a phase.
	Settle time.Duration
	// ProfileDir receives cpu.pprof, heap.pprof, timeline.tsv (the manager's metrics, RSS and
	// CPU time and the apiserver's and etcd's CPU time, every 250 ms from the initial sync on),
	// metrics-after-l1.txt (the manager's metrics then), l1-reflections.tsv and
	// l2-reflections.tsv (every update's write→CombinedStatus latency, by send time) and
	// l1-returned.tsv (the same for the returned statuses of multi-WEC objects).
	ProfileDir string
	Seed       uint64
	// APIServerPID is the kube-apiserver's process, for its CPU time; 0: not measured.
	// EtcdPID is etcd's, for the timeline; 0: not sampled.
	APIServerPID, EtcdPID int
	// PlainCPUPerWrite is the apiserver's CPU time per plain write at full speed, and
	// IdleCPUPerSec its idle CPU seconds per second, from the baseline.
	PlainCPUPerWrite time.Duration
	IdleCPUPerSec    float64
	// APIServer reaches the apiserver for its request counters; nil: not read.
	APIServer *rest.Config
	// APIServerProfile, when set, reaches an apiserver started with --profiling: its CPU
	// profiles over L1 and L2 go to ProfileDir/apiserver-l1-cpu.pprof and apiserver-cpu.pprof.
	APIServerProfile *rest.Config
	// SyncProfile, when positive, is how long the manager's CPU profile from its start (over the
	// initial sync) runs; it goes to ProfileDir/sync-cpu.pprof.
	SyncProfile time.Duration
}

// StatusfoldResult is what the manager achieves, phase by phase.
type StatusfoldResult struct {
	L1 L1Result `json:"l1"`
	L2 L2Result `json:"l2"`
	L3 L3Result `json:"l3"`
	// HotSpots are the top functions of the manager's CPU profile over L2.
	HotSpots []HotSpot `json:"hotSpots,omitempty"`
}

// L1Result is statusfold under light load: updates paced at a fraction of the plain maximum.
type L1Result struct {
	RatePerSec float64 `json:"ratePerSec"`
	Updates    int     `json:"updates"`
	// CombinedStatus is WorkStatus write → the CombinedStatus reflecting it.
	CombinedStatus Latency `json:"writeToCombinedStatus"`
	// Returned is WorkStatus write → the workload object's .status reflecting it (multi-WEC
	// objects, aggregated).
	Returned Latency `json:"writeToReturnedStatus"`
	Cost
}

// Cost is what a phase's updates cost, per update.
type Cost struct {
	// WritesPerUpdate is apiserver writes by the manager per WorkStatus update.
	WritesPerUpdate float64 `json:"writesPerUpdate"`
	// ManagerCPUPerUpdate is the manager's CPU time per update.
	ManagerCPUPerUpdate time.Duration `json:"managerCPUPerUpdate"`
	// APIServerCPUPerUpdate is the apiserver's CPU time per update: the update's own write
	// plus everything statusfold makes the apiserver do for it; 0: not measured.
	APIServerCPUPerUpdate time.Duration `json:"apiserverCPUPerUpdate"`
	// Requests are the apiserver's requests over the phase by verb and resource, most
	// handling time first (the writers' own included); empty: not read.
	Requests []RequestCount `json:"apiserverRequests,omitempty"`
}

// L2Result is statusfold with the writers writing as fast as they can.
type L2Result struct {
	Writers int `json:"writers"`
	// Duration is how long the writers wrote; Updates how many writes they made.
	Duration        time.Duration `json:"duration"`
	Updates         int           `json:"updates"`
	WriteRatePerSec float64       `json:"writeRatePerSec"`
	// Windows are the staleness windows of the writing time; Trend their p99's course.
	Windows []Window `json:"windows"`
	Trend   Trend    `json:"trend"`
	// Drain is the time from the writers' stop until every update was reflected; Unreflected
	// is the number of updates still not reflected when the wait for them gave up (Drain is
	// then that wait's length).
	Drain       time.Duration `json:"drain"`
	Unreflected int           `json:"unreflected"`
	// SustainedRatePerSec is Updates divided by the time from the start until every update was
	// reflected.
	SustainedRatePerSec float64 `json:"sustainedRatePerSec"`
	// Cost is over the writing time and the drain.
	Cost
	// APIServerCPUAddedPerUpdate is APIServerCPUPerUpdate less the apiserver CPU of a plain
	// write at full speed (the baseline's): what statusfold adds per update.
	APIServerCPUAddedPerUpdate time.Duration `json:"apiserverCPUAddedPerUpdate"`
	// APIServerIdleCPUPerUpdate is the apiserver's idle CPU (the baseline's rate) over the
	// phase, per update: the part of APIServerCPUPerUpdate that is there with no writes at all.
	APIServerIdleCPUPerUpdate time.Duration `json:"apiserverIdleCPUPerUpdate"`
}

// L3Result is the manager's start and memory.
type L3Result struct {
	WorkStatuses int `json:"workStatuses"`
	// InitialSync is the time from the manager's start until every object's CombinedStatus
	// reflected the newest write of each of its WorkStatuses; InitialSyncReturned the same
	// for the returned status of every multi-WEC object.
	InitialSync         time.Duration `json:"initialSync"`
	InitialSyncReturned time.Duration `json:"initialSyncReturned"`
	// Idle is the time from the end of the initial sync until the manager reported its write
	// delay at 0 and its objects queue empty (awaitIdle), which L1 waits for; IdleTimedOut says
	// it did not within the bound, and L1 started anyway.
	Idle         time.Duration `json:"idleAfterSync"`
	IdleTimedOut bool          `json:"idleTimedOut,omitempty"`
	// PeakRSS is the manager's peak resident set (VmHWM) at the end of the run, bytes.
	PeakRSS            int64   `json:"peakRSSBytes"`
	BytesPerWorkStatus float64 `json:"bytesPerWorkStatus"`
	// HeapInuse is the live heap after a GC; InformerBytes and CacheBytes split it between
	// informer caches and statusfold's own caches, as attributed by a heap profile.
	HeapInuse     int64 `json:"heapInuseBytes"`
	InformerBytes int64 `json:"informerBytes"`
	CacheBytes    int64 `json:"cacheBytes"`
}

// RunStatusfold measures the manager, started after the fixture was populated: its initial
// sync (L3), L1, L2, then its memory (L3).
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

	timelineCtx, stopTimeline := context.WithCancel(ctx)
	defer stopTimeline()
	go sampleTimeline(timelineCtx, mgr, sc.APIServerPID, sc.EtcdPID, 250*time.Millisecond, filepath.Join(sc.ProfileDir, "timeline.tsv"))
	syncProf := make(chan error, 1)
	if secs := int(sc.SyncProfile / time.Second); secs > 0 {
		go func() {
			syncProf <- fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", mgr.PprofAddr, secs), filepath.Join(sc.ProfileDir, "sync-cpu.pprof"))
		}()
	} else {
		syncProf <- nil
	}
	if err := initialSync(ctx, f, mgr, cs, ret, sc.Settle, &res.L3); err != nil {
		return nil, err
	}
	if err := <-syncProf; err != nil { // before L1: the profile must not overlap a measured phase
		return nil, fmt.Errorf("the manager's CPU profile over the sync: %w", err)
	}
	logf("statusfold: initial sync of %d WorkStatuses took %s (returned statuses %s)",
		res.L3.WorkStatuses, res.L3.InitialSync.Round(time.Millisecond), res.L3.InitialSyncReturned.Round(time.Millisecond))
	res.L3.Idle, res.L3.IdleTimedOut = awaitIdle(ctx, mgr, idleBound)
	logf("statusfold: idle (write delay 0, objects queue empty) %s after the sync (timed out: %v)", res.L3.Idle.Round(time.Millisecond), res.L3.IdleTimedOut)

	f.writer.onSend = func(tg target, seq int64, sent time.Time) {
		cs.add(tg.idx, seq, sent)
		if f.IsMulti(tg.idx) {
			ret.add(tg.idx, seq, sent)
		}
	}
	defer func() { f.writer.onSend = nil }()
	pick := newPicker(f, sc.Seed)
	write := func(ctx context.Context) error {
		i, j, ready := pick()
		_, _, err := f.Write(ctx, i, j, ready)
		return err
	}

	// L1: updates paced at a fraction of the plain maximum rate.
	l1 := &res.L1
	l1.RatePerSec, l1.Updates = sc.L1Rate, sc.L1Updates
	l1Prof := profileAPIServer(ctx, sc.APIServerProfile, int(float64(sc.L1Updates)/sc.L1Rate), filepath.Join(sc.ProfileDir, "apiserver-l1-cpu.pprof"))
	meter, err := startCost(ctx, mgr, sc.APIServerPID, sc.APIServer)
	if err != nil {
		return nil, err
	}
	err = f.writer.paced(ctx, sc.L1Updates, sc.L1Rate, func(ctx context.Context, _ int) error { return write(ctx) })
	if err != nil {
		return nil, fmt.Errorf("L1 updates: %w", err)
	}
	if err := cs.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("L1 CombinedStatus: %w", err)
	}
	if err := ret.settle(ctx, sc.Settle); err != nil {
		return nil, fmt.Errorf("L1 returned status: %w", err)
	}
	if l1.Cost, err = meter.per(ctx, sc.L1Updates); err != nil {
		return nil, err
	}
	if err := <-l1Prof; err != nil {
		logf("apiserver CPU profile over L1: %v", err)
	}
	if err := fetch("http://"+mgr.MetricsAddr+"/metrics", filepath.Join(sc.ProfileDir, "metrics-after-l1.txt")); err != nil {
		logf("manager metrics: %v", err)
	}
	csDone, _ := cs.take()
	retDone, _ := ret.take()
	if err := writeReflections(filepath.Join(sc.ProfileDir, "l1-reflections.tsv"), csDone); err != nil {
		logf("L1 reflections: %v", err)
	}
	if err := writeReflections(filepath.Join(sc.ProfileDir, "l1-returned.tsv"), retDone); err != nil {
		logf("L1 returned statuses: %v", err)
	}
	l1.CombinedStatus = Summarize(latencies(csDone))
	l1.Returned = Summarize(latencies(retDone))
	logf("statusfold L1: %d updates at %.0f/s: write→CombinedStatus %s; write→returned %s; %.2f writes, %s manager CPU, %s apiserver CPU per update; apiserver requests:%s",
		l1.Updates, l1.RatePerSec, l1.CombinedStatus, l1.Returned, l1.WritesPerUpdate, l1.ManagerCPUPerUpdate, l1.APIServerCPUPerUpdate, formatRequests(l1.Requests, 12))

	if err := runL2(ctx, f, mgr, sc, cs, ret, write, &res.L2, logf); err != nil {
		return nil, err
	}
	if top, err := TopFunctions(filepath.Join(sc.ProfileDir, "cpu.pprof"), 15); err == nil {
		res.HotSpots = top
	} else {
		logf("CPU profile: %v", err)
	}

	// L3: memory.
	st, err := ReadProcStat(mgr.Cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.L3.PeakRSS = st.PeakRSS
	res.L3.BytesPerWorkStatus = float64(st.PeakRSS) / float64(res.L3.WorkStatuses)
	heap := filepath.Join(sc.ProfileDir, "heap.pprof")
	if err := fetch("http://"+mgr.PprofAddr+"/debug/pprof/heap?gc=1", heap); err != nil {
		logf("heap profile: %v", err)
	} else if split, err := SplitHeap(heap); err != nil {
		logf("heap profile: %v", err)
	} else {
		res.L3.HeapInuse, res.L3.InformerBytes, res.L3.CacheBytes = split.Total, split.Informers, split.Statusfold
	}
	return res, nil
}

// initialSync waits until the manager, started on the populated fixture, reflected the newest
// write of every WorkStatus, and fills the sync times of l3.
func initialSync(ctx context.Context, f *Fixture, mgr *ManagerProcess, cs, ret *tracker, bound time.Duration, l3 *L3Result) error {
	l3.WorkStatuses = f.WECs * f.Objects
	all := make([]int, f.Objects)
	var multi []int
	for j := range all {
		all[j] = j
		if f.IsMulti(j) {
			multi = append(multi, j)
		}
	}
	for l3.InitialSync == 0 || l3.InitialSyncReturned == 0 {
		if time.Since(mgr.Started) > bound {
			return fmt.Errorf("initial sync not done after %s", bound)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if l3.InitialSync == 0 && cs.caughtUp(all, f.MaxSeq) {
			l3.InitialSync = time.Since(mgr.Started)
		}
		if l3.InitialSyncReturned == 0 && ret.caughtUp(multi, f.MaxSeq) {
			l3.InitialSyncReturned = time.Since(mgr.Started)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// idleBound bounds awaitIdle.
const idleBound = 30 * time.Second

// awaitIdle waits until the manager's metrics show its Pacer's write delay at 0 and its objects
// queue empty in two samples in a row, 100 ms apart, or until bound has passed, and returns how
// long it waited and whether it gave up. L1 measures light load: right after the initial sync
// the queue still holds the sync's last evaluations and the Pacer's delay is still at its cap
// from the sync's writes (it decays within a few seconds: docs/controller.md, "Pacing writes"),
// so updates sent then measure the end of the start (reported as this wait), not light load.
func awaitIdle(ctx context.Context, mgr *ManagerProcess, bound time.Duration) (time.Duration, bool) {
	start := time.Now()
	calm := 0
	for time.Since(start) < bound && ctx.Err() == nil {
		mv, err := ScrapeMetrics(mgr.MetricsAddr, idleMetrics...)
		delay, hasDelay := mv[idleMetrics[0]]
		depth, hasDepth := mv[idleMetrics[1]]
		if err == nil && hasDelay && hasDepth && delay == 0 && depth == 0 { // a series not served is not idle
			if calm++; calm == 2 {
				return time.Since(start), false
			}
		} else {
			calm = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), true
}

// idleMetrics are the series awaitIdle reads: the Pacer's delay and the objects queue's depth.
var idleMetrics = timelineMetrics[:2]

// runL2 writes as fast as the writers can for sc.L2For, waits for every update to be reflected,
// and fills l2.
func runL2(ctx context.Context, f *Fixture, mgr *ManagerProcess, sc StatusfoldConfig, cs, ret *tracker,
	write func(context.Context) error, l2 *L2Result, logf func(string, ...any)) error {
	l2.Writers = f.writer.workers
	secs := max(int(sc.L2For/time.Second), 1)
	profDone := make(chan error, 1)
	go func() {
		profDone <- fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", mgr.PprofAddr, secs), filepath.Join(sc.ProfileDir, "cpu.pprof"))
	}()
	apiProf := profileAPIServer(ctx, sc.APIServerProfile, secs, filepath.Join(sc.ProfileDir, "apiserver-cpu.pprof"))
	meter, err := startCost(ctx, mgr, sc.APIServerPID, sc.APIServer)
	if err != nil {
		return err
	}
	var n atomic.Int64
	start := time.Now()
	err = f.writer.until(ctx, start.Add(sc.L2For), func(ctx context.Context) error {
		if err := write(ctx); err != nil {
			return err
		}
		n.Add(1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("L2 updates: %w", err)
	}
	stopped := time.Now()
	l2.Updates = int(n.Load())
	l2.Duration = stopped.Sub(start)
	l2.WriteRatePerSec = float64(l2.Updates) / l2.Duration.Seconds()

	// Drain: a wait that gives up is a measurement (a MISS), not a failure of the run.
	_ = cs.settle(ctx, sc.Settle)
	_ = ret.settle(ctx, sc.Settle)
	if err := ctx.Err(); err != nil {
		return err
	}
	if l2.Cost, err = meter.per(ctx, l2.Updates); err != nil {
		return err
	}
	l2.APIServerCPUAddedPerUpdate = l2.APIServerCPUPerUpdate - sc.PlainCPUPerWrite
	csDone, csPending := cs.take()
	retDone, retPending := ret.take()
	if err := writeReflections(filepath.Join(sc.ProfileDir, "l2-reflections.tsv"), csDone); err != nil {
		logf("L2 reflections: %v", err)
	}
	updates, last := reflected(csDone, csPending, retDone, retPending)
	l2.Unreflected = len(csPending) + len(retPending)
	if l2.Unreflected > 0 {
		last = stopped.Add(sc.Settle)
	}
	l2.Drain = max(last.Sub(stopped), 0)
	l2.SustainedRatePerSec = float64(l2.Updates) / max(last.Sub(start), l2.Duration).Seconds()
	if l2.Updates > 0 {
		measured := max(last.Sub(start), l2.Duration).Seconds()
		l2.APIServerIdleCPUPerUpdate = time.Duration(sc.IdleCPUPerSec * measured / float64(l2.Updates) * float64(time.Second))
	}
	l2.Windows = StalenessWindows(updates, start, sc.Window, max(int(sc.L2For/sc.Window), 1))
	l2.Trend = TrendOf(l2.Windows)
	logf("statusfold L2: %d writers, %d updates in %s (%.0f/s); drain %s (%d unreflected); p99 staleness first %s, last %s, worst %s, slope %s/min; %.2f writes, %s manager CPU, %s apiserver CPU (%s added) per update; apiserver requests:%s",
		l2.Writers, l2.Updates, l2.Duration.Round(time.Millisecond), l2.WriteRatePerSec, l2.Drain.Round(time.Millisecond), l2.Unreflected,
		ms(l2.Trend.First), ms(l2.Trend.Last), ms(l2.Trend.Worst), ms(l2.Trend.SlopePerMinute),
		l2.WritesPerUpdate, l2.ManagerCPUPerUpdate, l2.APIServerCPUPerUpdate, l2.APIServerCPUAddedPerUpdate, formatRequests(l2.Requests, 12))
	if err := <-profDone; err != nil {
		logf("CPU profile: %v", err)
	}
	if err := <-apiProf; err != nil {
		logf("apiserver CPU profile: %v", err)
	}
	return nil
}

// costMeter measures what a phase costs: the manager's writes and CPU, the apiserver's CPU and
// requests.
type costMeter struct {
	mgr      *ManagerProcess
	before   managerSample
	api      cpuMeter
	requests *apiRequests
}

// startCost starts measuring; apiserver nil: its requests are not read.
func startCost(ctx context.Context, mgr *ManagerProcess, apiserverPID int, apiserver *rest.Config) (*costMeter, error) {
	reqs, err := startRequests(ctx, apiserver)
	if err != nil {
		return nil, err
	}
	s, err := mgr.sample()
	if err != nil {
		return nil, err
	}
	return &costMeter{mgr: mgr, before: s, api: startCPU(apiserverPID), requests: reqs}, nil
}

// per is the cost since the start divided by n updates.
func (m *costMeter) per(ctx context.Context, n int) (Cost, error) {
	after, err := m.mgr.sample()
	if err != nil || n <= 0 {
		return Cost{}, err
	}
	c := Cost{
		WritesPerUpdate:       (after.writes - m.before.writes) / float64(n),
		ManagerCPUPerUpdate:   (after.proc.CPU - m.before.proc.CPU) / time.Duration(n),
		APIServerCPUPerUpdate: m.api.per(n),
	}
	c.Requests, err = m.requests.since(ctx, n)
	return c, err
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

// profileAPIServer takes the apiserver's CPU profile over the next secs seconds in the
// background; the channel reports the outcome (at once when cfg is nil: no profile).
func profileAPIServer(ctx context.Context, cfg *rest.Config, secs int, path string) <-chan error {
	done := make(chan error, 1)
	if cfg == nil {
		done <- nil
		return done
	}
	go func() { done <- fetchAPIServerProfile(ctx, cfg, max(secs, 1), path) }()
	return done
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

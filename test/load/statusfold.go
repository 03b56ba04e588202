package load

import (
	"context"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	if err := followReflections(watchCtx, f, cs, ret); err != nil {
		return nil, err
	}

	timelineCtx, stopTimeline := context.WithCancel(ctx)
	defer stopTimeline()
	go sampleTimeline(timelineCtx, mgr, sc.APIServerPID, sc.EtcdPID, 250*time.Millisecond, filepath.Join(sc.ProfileDir, "timeline.tsv"))
	if err := runStart(ctx, f, mgr, sc, cs, ret, &res.L3, logf); err != nil {
		return nil, err
	}

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
	if err := runL1(ctx, f, mgr, sc, cs, ret, write, &res.L1, logf); err != nil {
		return nil, err
	}
	if err := runL2(ctx, f, mgr, sc, cs, ret, write, &res.L2, logf); err != nil {
		return nil, err
	}
	if top, err := TopFunctions(filepath.Join(sc.ProfileDir, "cpu.pprof"), 15); err == nil {
		res.HotSpots = top
	} else {
		logf("CPU profile: %v", err)
	}
	if err := measureMemory(mgr, sc, &res.L3, logf); err != nil {
		return nil, err
	}
	return res, nil
}

// followReflections feeds cs with the marker of every CombinedStatus write and ret with the
// sequence number of every returned status, as the watches deliver them, until ctx ends.
func followReflections(ctx context.Context, f *Fixture, cs, ret *tracker) error {
	err := follow(ctx, f.dyn.Resource(combinedStatusGVR).Namespace(ObjectNamespace), func(u *unstructured.Unstructured, now time.Time) {
		j, ok := objectIndex(u.GetLabels()[controlv1alpha1.LabelCombinedStatusName])
		if m, ok2 := markerOf(u); ok && ok2 && j < f.Objects {
			cs.reflect(j, m, now)
		}
	})
	if err != nil {
		return err
	}
	return follow(ctx, f.dyn.Resource(deploymentGVR).Namespace(ObjectNamespace), func(u *unstructured.Unstructured, now time.Time) {
		j, ok := objectIndex(u.GetName())
		if m, ok2 := returnedSeqOf(u); ok && ok2 && j < f.Objects {
			ret.reflect(j, m, now)
		}
	})
}

// measureMemory reads the manager's peak RSS and splits its heap profile (L3's memory) into l3.
func measureMemory(mgr *ManagerProcess, sc StatusfoldConfig, l3 *L3Result, logf func(string, ...any)) error {
	st, err := ReadProcStat(mgr.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	l3.PeakRSS = st.PeakRSS
	l3.BytesPerWorkStatus = float64(st.PeakRSS) / float64(l3.WorkStatuses)
	heap := filepath.Join(sc.ProfileDir, "heap.pprof")
	if err := fetch("http://"+mgr.PprofAddr+"/debug/pprof/heap?gc=1", heap); err != nil {
		logf("heap profile: %v", err)
	} else if split, err := SplitHeap(heap); err != nil {
		logf("heap profile: %v", err)
	} else {
		l3.HeapInuse, l3.InformerBytes, l3.CacheBytes = split.Total, split.Informers, split.Statusfold
	}
	return nil
}

package load

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// runStart times the manager's initial sync (with its CPU profile over it when sc.SyncProfile is
// set) and the wait until it is idle, into l3.
func runStart(ctx context.Context, f *Fixture, mgr *ManagerProcess, sc StatusfoldConfig, cs, ret *tracker, l3 *L3Result, logf func(string, ...any)) error {
	syncProf := make(chan error, 1)
	if secs := int(sc.SyncProfile / time.Second); secs > 0 {
		go func() {
			syncProf <- fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", mgr.PprofAddr, secs), filepath.Join(sc.ProfileDir, "sync-cpu.pprof"))
		}()
	} else {
		syncProf <- nil
	}
	if err := initialSync(ctx, f, mgr, cs, ret, sc.Settle, l3); err != nil {
		return err
	}
	if err := <-syncProf; err != nil { // before L1: the profile must not overlap a measured phase
		return fmt.Errorf("the manager's CPU profile over the sync: %w", err)
	}
	logf("statusfold: initial sync of %d WorkStatuses took %s (returned statuses %s)",
		l3.WorkStatuses, l3.InitialSync.Round(time.Millisecond), l3.InitialSyncReturned.Round(time.Millisecond))
	l3.Idle, l3.IdleTimedOut = awaitIdle(ctx, mgr, idleBound)
	logf("statusfold: idle (write delay 0, objects queue empty) %s after the sync (timed out: %v)", l3.Idle.Round(time.Millisecond), l3.IdleTimedOut)
	return nil
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

package load

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"
)

// runL1 writes sc.L1Updates updates paced at sc.L1Rate, waits for every one to be reflected, and
// fills l1.
func runL1(ctx context.Context, f *Fixture, mgr *ManagerProcess, sc StatusfoldConfig, cs, ret *tracker,
	write func(context.Context) error, l1 *L1Result, logf func(string, ...any)) error {
	l1.RatePerSec, l1.Updates = sc.L1Rate, sc.L1Updates
	l1Prof := profileAPIServer(ctx, sc.APIServerProfile, int(float64(sc.L1Updates)/sc.L1Rate), filepath.Join(sc.ProfileDir, "apiserver-l1-cpu.pprof"))
	meter, err := startCost(ctx, mgr, sc.APIServerPID, sc.APIServer)
	if err != nil {
		return err
	}
	err = f.writer.paced(ctx, sc.L1Updates, sc.L1Rate, func(ctx context.Context, _ int) error { return write(ctx) })
	if err != nil {
		return fmt.Errorf("L1 updates: %w", err)
	}
	if err := cs.settle(ctx, sc.Settle); err != nil {
		return fmt.Errorf("L1 CombinedStatus: %w", err)
	}
	if err := ret.settle(ctx, sc.Settle); err != nil {
		return fmt.Errorf("L1 returned status: %w", err)
	}
	if l1.Cost, err = meter.per(ctx, sc.L1Updates); err != nil {
		return err
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
	return nil
}

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

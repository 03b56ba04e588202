package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

// timelineMetrics are the manager's series a timeline samples: the Pacer's delay, the objects
// queue's depth, and the writes and evaluations so far.
var timelineMetrics = []string{
	"statusfold_write_delay_seconds",
	`workqueue_depth{controller="statusfold_objects"}`,
	"statusfold_writes_total",
	`controller_runtime_reconcile_total{controller="statusfold_objects"}`,
	`controller_runtime_reconcile_total{controller="statusfold_policies"}`,
	`statusfold_writes_total{what="binding"}`,
	`statusfold_writes_total{what="binding-status"}`,
}

// sampleTimeline scrapes the manager's metrics every interval until ctx ends and writes one
// tab-separated line per sample to path (Unix time in milliseconds, timelineMetrics, the
// manager's RSS in MiB, then the CPU time in milliseconds that the manager, the apiserver and
// etcd have used so far; -1 for a process not found), so that a phase's slow updates can be set
// beside what the manager was doing and which process was busy. A sample that cannot be read
// is skipped: the timeline is a diagnostic, not a measurement.
func sampleTimeline(ctx context.Context, mgr *ManagerProcess, apiserverPID, etcdPID int, interval time.Duration, path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	fmt.Fprint(w, "unix_ms")
	for _, n := range timelineMetrics {
		fmt.Fprintf(w, "\t%s", n)
	}
	fmt.Fprintln(w, "\trss_mib\tmanager_cpu_ms\tapiserver_cpu_ms\tetcd_cpu_ms")
	cpuMillis := func(pid int) int64 {
		if pid == 0 {
			return -1
		}
		st, err := ReadProcStat(pid)
		if err != nil {
			return -1
		}
		return st.CPU.Milliseconds()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			mv, err := ScrapeMetrics(mgr.MetricsAddr, timelineMetrics...)
			if err != nil {
				continue
			}
			st, err := ReadProcStat(mgr.Cmd.Process.Pid)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "%d", now.UnixMilli())
			for _, n := range timelineMetrics {
				fmt.Fprintf(w, "\t%g", mv[n])
			}
			fmt.Fprintf(w, "\t%d\t%d\t%d\t%d\n", st.RSS>>20, st.CPU.Milliseconds(), cpuMillis(apiserverPID), cpuMillis(etcdPID))
		}
	}
}

// writeReflections writes done, ordered by send time, to path: the send's Unix time in
// milliseconds, the object, and the write→reflection latency in milliseconds.
func writeReflections(path string, done []reflection) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	sorted := slices.SortedFunc(slices.Values(done), func(a, b reflection) int { return a.sent.Compare(b.sent) })
	fmt.Fprintln(w, "sent_unix_ms\tobject\tlatency_ms")
	for _, r := range sorted {
		fmt.Fprintf(w, "%d\t%d\t%.1f\n", r.sent.UnixMilli(), r.obj, float64(r.at.Sub(r.sent).Microseconds())/1000)
	}
	return w.Flush()
}

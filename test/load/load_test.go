package load

import (
	"context"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/test/framework"
)

// Flags size TestLoad, the measurement that `make load` runs (at the default size, the flags'
// defaults). TestLoadSmoke, which `go test ./test/load` runs, ignores them.
var (
	flagMeasure     = flag.Bool("load.measure", false, "run TestLoad, sized by the other -load flags")
	flagWECs        = flag.Int("load.wecs", 1000, "number of simulated WECs")
	flagObjects     = flag.Int("load.objects", 100, "number of workload objects (each goes to every WEC)")
	flagUpdates     = flag.Int("load.updates", 3000, "L1: updates, paced")
	flagRate        = flag.Float64("load.rate", 0, "L1: update rate per second (0: -load.l1-fraction of the baseline's maximum write rate)")
	flagL1Fraction  = flag.Float64("load.l1-fraction", 0.1, "L1: the fraction of the baseline's maximum write rate that updates are paced at")
	flagWorkers     = flag.Int("load.workers", 8, "concurrent writers (baseline maximum rate and L2)")
	flagIdleFor     = flag.Duration("load.idle-for", 5*time.Second, "baseline: how long to measure the apiserver's CPU with nothing writing")
	flagMaxRateFor  = flag.Duration("load.max-rate-for", 10*time.Second, "baseline: how long to write at the maximum rate")
	flagL2For       = flag.Duration("load.l2-for", 60*time.Second, "L2: how long the writers write as fast as they can")
	flagWindow      = flag.Duration("load.window", 10*time.Second, "L2: the length of a staleness window")
	flagReport      = flag.String("load.report", "", "write the JSON report to this file (default: a temp file)")
	flagMultiEvery  = flag.Int("load.multi-every", 10, "every N-th object also gets its status aggregated from all WECs")
	flagCoalesce    = flag.Duration("load.coalesce", aggregator.DefaultCoalesceDelay, "the manager's --coalesce-delay")
	flagMaxDelay    = flag.Duration("load.max-write-delay", aggregator.DefaultMaxWriteDelay, "the manager's --max-write-delay (0: pacing off)")
	flagMgrWorkers  = flag.Int("load.manager-workers", aggregator.DefaultWorkers, "the manager's --workers")
	flagGCPercent   = flag.Int("load.gc-percent", aggregator.DefaultGCPercent, "the manager's --gc-percent (100: the Go runtime's default)")
	flagStartupGC   = flag.Int("load.startup-gc-percent", aggregator.DefaultStartupGCPercent, "the manager's --startup-gc-percent (0: --gc-percent from the start)")
	flagSettle      = flag.Duration("load.settle", 5*time.Minute, "how long statusfold may take to reflect every write of a phase (the initial sync, L1, L2's drain)")
	flagAPIProfile  = flag.Bool("load.apiserver-profile", false, "run the apiserver with --profiling and take its CPU profiles over L1 and L2")
	flagConsistency = flag.Bool("load.apiserver-consistency-checks", false, "keep the apiserver's periodic watch-cache consistency check (DetectCacheInconsistency) on: every 5–7.5 min it lists every WorkStatus from etcd, and for ≈20 s at the default size slows whichever phase it lands in")
	flagAPIGCTrace  = flag.Bool("load.apiserver-gctrace", false, "run the apiserver with GODEBUG=gctrace=1; its garbage collections go to apiserver-gc.tsv in the profile folder")
	flagSyncProfile = flag.Duration("load.sync-profile", 0, "take the manager's CPU profile for this long from its start (over the initial sync; it must end before L1) into sync-cpu.pprof; 0: none")
	flagProfileDir  = flag.String("load.profile-dir", "", "write cpu.pprof, heap.pprof and manager.log here (default: a temp folder)")
)

func TestMain(m *testing.M) {
	if RunManagerHelper() {
		return
	}
	flag.Parse()
	os.Exit(m.Run())
}

// Config is one load run's size and settings.
type Config struct {
	WECs, Objects, MultiEvery, Writers int
	L1Updates                          int
	L1Rate, L1Fraction                 float64
	IdleFor, MaxRateFor, L2For, Window time.Duration
	Settle                             time.Duration
	CoalesceDelay                      time.Duration
	MaxWriteDelay                      time.Duration // the manager's --max-write-delay (0: pacing off)
	ManagerWorkers                     int
	GCPercent                          int           // the manager's --gc-percent
	StartupGCPercent                   int           // the manager's --startup-gc-percent
	SyncProfile                        time.Duration // the manager's CPU profile from its start (sync-cpu.pprof)
	APIServerProfile                   bool
	APIServerGCTrace                   bool // the apiserver's garbage collections to apiserver-gc.tsv
	// ConsistencyChecks keeps the apiserver's periodic watch-cache consistency check on (off:
	// --feature-gates=DetectCacheInconsistency=false; see docs/performance.md).
	ConsistencyChecks bool
	// ProfileDir receives the profiles and the manager's log; ReportPath the JSON report.
	ProfileDir, ReportPath string
}

// TestLoad measures the targets of docs/performance.md's verdict table (L1, L2, L3) against the
// same run's baseline and prints them; it fails only when the measurement itself is broken (a
// figure missing), not on a missed target. Run by `make load`.
func TestLoad(t *testing.T) {
	if !*flagMeasure {
		t.Skip("the load measurement runs with -args -load.measure (make load)")
	}
	framework.RequireIntegration(t)
	runLoad(t, Config{
		WECs: *flagWECs, Objects: *flagObjects, MultiEvery: *flagMultiEvery, Writers: *flagWorkers,
		L1Updates: *flagUpdates, L1Rate: *flagRate, L1Fraction: *flagL1Fraction,
		IdleFor: *flagIdleFor, MaxRateFor: *flagMaxRateFor, L2For: *flagL2For, Window: *flagWindow, Settle: *flagSettle,
		CoalesceDelay: *flagCoalesce, MaxWriteDelay: *flagMaxDelay, ManagerWorkers: *flagMgrWorkers, APIServerProfile: *flagAPIProfile,
		APIServerGCTrace: *flagAPIGCTrace, ConsistencyChecks: *flagConsistency, GCPercent: *flagGCPercent, StartupGCPercent: *flagStartupGC, SyncProfile: *flagSyncProfile, ProfileDir: *flagProfileDir, ReportPath: *flagReport,
	})
}

// TestLoadSmoke runs the three phases at a small size, with short phases, and checks that the
// report is complete: every figure present and finite, every update accounted for. It does not
// judge the targets.
func TestLoadSmoke(t *testing.T) {
	framework.RequireIntegration(t)
	rep := runLoad(t, Config{
		WECs: 10, Objects: 10, MultiEvery: 5, Writers: 8,
		L1Updates: 100, L1Fraction: 0.1,
		IdleFor: 2 * time.Second, MaxRateFor: 2 * time.Second, L2For: 6 * time.Second, Window: 2 * time.Second, Settle: time.Minute,
		CoalesceDelay: aggregator.DefaultCoalesceDelay, MaxWriteDelay: *flagMaxDelay, ManagerWorkers: aggregator.DefaultWorkers,
		GCPercent: *flagGCPercent, StartupGCPercent: *flagStartupGC, APIServerGCTrace: true,
	})
	if rep == nil {
		return
	}
	s := rep.Statusfold
	if got := s.L1.CombinedStatus.Count; got != 100 {
		t.Errorf("L1: %d write→CombinedStatus samples, want one per update (100)", got)
	}
	if s.L1.Returned.Count == 0 || s.L1.Returned.Count >= 100 {
		t.Errorf("L1: %d write→returned samples, want one per update of a multi-WEC object (2 objects of 10)", s.L1.Returned.Count)
	}
	if got := len(s.L2.Windows); got != 3 {
		t.Errorf("L2: %d windows, want 6 s / 2 s = 3", got)
	}
	if s.L2.Unreflected != 0 {
		t.Errorf("L2: %d updates never reflected", s.L2.Unreflected)
	}
}

// runLoad runs the baseline and the three phases, prints the tables, writes the JSON report
// and fails the test when the report is incomplete.
func runLoad(t *testing.T, c Config) *Report {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	fx := &Fixture{WECs: c.WECs, Objects: c.Objects, MultiEvery: c.MultiEvery, Workers: c.Writers, Logf: t.Logf}
	rep := newReport(c, fx, began)
	profDir := c.ProfileDir
	if profDir == "" {
		profDir = t.TempDir()
	}
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lcp := startLoadControlPlane(t, c, profDir, rep)
	defer lcp.finish()

	var err error
	if rep.Populate, err = fx.Setup(ctx, lcp.cp.Config); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	base, err := RunBaseline(ctx, fx, lcp.cp.Config, BaselineConfig{
		IdleFor: c.IdleFor, MaxRateFor: c.MaxRateFor, L1Writes: c.L1Updates, L1Rate: c.L1Rate, L1Fraction: c.L1Fraction,
		ListPageSize: 1000, APIServerPID: lcp.apiserverPID, Seed: 2, Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	rep.Baseline = base
	checkBaseline(t, base)
	rep.Statusfold = runManagerPhases(ctx, t, c, lcp, fx, base, profDir)
	rep.Notes = append(rep.Notes, "profiles and manager log in "+profDir)
	rep.Evaluate()
	rep.Duration = time.Since(began)
	var table strings.Builder
	rep.PrintTable(&table)
	t.Log("\n" + table.String())
	path := c.ReportPath
	if path == "" {
		path = filepath.Join(t.TempDir(), "load-report.json")
	}
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("report written to %s", path)
	if missing := rep.Incomplete(); len(missing) > 0 {
		t.Errorf("the report is incomplete:\n%s", strings.Join(missing, "\n"))
	}
	return rep
}

// newReport starts the report of a run of configuration c on fixture fx, begun at began.
func newReport(c Config, fx *Fixture, began time.Time) *Report {
	rep := &Report{
		Started: began.UTC(),
		Machine: Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()},
		Size: Size{
			WECs: c.WECs, Objects: c.Objects, WorkStatuses: c.WECs * c.Objects, Writers: c.Writers,
			L1Updates: c.L1Updates, L1Fraction: c.L1Fraction, L2For: c.L2For, Window: c.Window,
		},
		Manager: ManagerFlags{CoalesceDelay: c.CoalesceDelay, MaxWriteDelay: c.MaxWriteDelay, Workers: c.ManagerWorkers, GCPercent: c.GCPercent, StartupGCPercent: c.StartupGCPercent},
	}
	for j := range c.Objects {
		if fx.IsMulti(j) {
			rep.Size.MultiWECObjects++
		}
	}
	return rep
}

// loadControlPlane is the control plane of a load run, with its processes (0: not found) and
// finish, which turns the apiserver's gctrace into apiserver-gc.tsv when c.APIServerGCTrace.
type loadControlPlane struct {
	cp                    *framework.ControlPlane
	apiserverPID, etcdPID int
	finish                func()
}

// startLoadControlPlane starts the control plane as c asks (profiling, the watch-cache
// consistency check, gctrace into profDir) and notes in rep what is not measured.
func startLoadControlPlane(t *testing.T, c Config, profDir string, rep *Report) loadControlPlane {
	var cpOpts []framework.Option
	if c.APIServerProfile {
		cpOpts = append(cpOpts, framework.WithAPIServerFlag("profiling", "true"))
	}
	if !c.ConsistencyChecks {
		// Every 5–7.5 minutes the apiserver lists every object of each cached resource from etcd
		// to compare it with its watch cache; at 100,000 WorkStatuses that allocates ≈6 GB in ≈20 s
		// and slows every request meanwhile, in whichever phase (baseline or statusfold's) it
		// lands. It is not the load under test, so it is off unless asked for.
		cpOpts = append(cpOpts, framework.WithAPIServerFlag("feature-gates", "DetectCacheInconsistency=false"))
		rep.Notes = append(rep.Notes, "the apiserver's watch-cache consistency check was off (-load.apiserver-consistency-checks turns it on)")
	}
	var gcTrace *os.File
	if c.APIServerGCTrace {
		var err error
		if gcTrace, err = os.Create(filepath.Join(profDir, "apiserver-stderr.log")); err != nil {
			t.Fatal(err)
		}
		cpOpts = append(cpOpts, framework.WithAPIServerGCTrace(gcTrace))
	}
	l := loadControlPlane{cp: framework.RunControlPlane(t, cpOpts...), finish: func() {}}
	if u, err := url.Parse(l.cp.Config.Host); err == nil {
		l.apiserverPID = FindAPIServer(u.Port())
	}
	if gcTrace != nil {
		started, err := ProcStart(l.apiserverPID)
		if err != nil {
			gcTrace.Close()
			t.Fatalf("apiserver gctrace: the apiserver's start time: %v", err)
		}
		l.finish = func() {
			writeAPIServerGC(t, gcTrace.Name(), started, filepath.Join(profDir, "apiserver-gc.tsv"))
			gcTrace.Close()
		}
	}
	l.etcdPID = FindEtcd(l.apiserverPID)
	if l.apiserverPID == 0 {
		rep.Notes = append(rep.Notes, "kube-apiserver process not found: its CPU time is not measured")
	}
	return l
}

// runManagerPhases starts the manager (its log in profDir) and measures it: RunStatusfold.
func runManagerPhases(ctx context.Context, t *testing.T, c Config, lcp loadControlPlane, fx *Fixture, base *BaselineResult, profDir string) *StatusfoldResult {
	logFile, err := os.Create(filepath.Join(profDir, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	mgr, err := StartManager(ctx, ManagerOptions{Kubeconfig: lcp.cp.Kubeconfig, CoalesceDelay: c.CoalesceDelay, MaxWriteDelay: c.MaxWriteDelay, Workers: c.ManagerWorkers, GCPercent: c.GCPercent, StartupGCPercent: c.StartupGCPercent, Log: logFile})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	defer mgr.Stop()
	var apiProfile *rest.Config
	if c.APIServerProfile {
		apiProfile = lcp.cp.Config
	}
	sf, err := RunStatusfold(ctx, fx, mgr, StatusfoldConfig{
		L1Updates: c.L1Updates, L1Rate: base.L1.RatePerSec, L2For: c.L2For, Window: c.Window,
		Settle: c.Settle, ProfileDir: profDir, Seed: 1, APIServerPID: lcp.apiserverPID, EtcdPID: lcp.etcdPID,
		PlainCPUPerWrite: base.MaxRate.APIServerCPUPerWrite, IdleCPUPerSec: base.IdleCPUPerSec,
		APIServer: lcp.cp.Config, APIServerProfile: apiProfile, SyncProfile: c.SyncProfile,
	}, t.Logf)
	if err != nil {
		t.Fatalf("statusfold: %v (manager log: %s)", err, logFile.Name())
	}
	return sf
}

// checkBaseline fails the test when the baseline measurement is not usable: writes lost on the
// watch, or no writes at all.
func checkBaseline(t *testing.T, b *BaselineResult) {
	t.Helper()
	if b.MaxRate.Writes == 0 {
		t.Errorf("no writes at the maximum rate: %+v", b.MaxRate)
	}
	if b.MaxRate.WriteToWatch.Count != b.MaxRate.Writes {
		t.Errorf("write→watch samples at the maximum rate = %d, want %d", b.MaxRate.WriteToWatch.Count, b.MaxRate.Writes)
	}
	if b.L1.WriteToWatch.Count != b.L1.Writes {
		t.Errorf("write→watch samples at the L1 rate = %d, want %d", b.L1.WriteToWatch.Count, b.L1.Writes)
	}
	// An unseen write counts as the 30 s timeout: the watch must deliver every write.
	if b.L1.WriteToWatch.Max >= 30*time.Second || b.MaxRate.WriteToWatch.Max >= 30*time.Second {
		t.Errorf("some writes never reached the watch: %s / %s", b.L1.WriteToWatch, b.MaxRate.WriteToWatch)
	}
}

// writeAPIServerGC turns the apiserver's gctrace lines (in its standard error, logPath) into a
// table of its garbage collections in Unix time (tsvPath), and fails the test when there are none:
// the measurement asked for did not happen.
func writeAPIServerGC(t *testing.T, logPath string, start time.Time, tsvPath string) {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Errorf("apiserver gctrace: %v", err)
		return
	}
	defer f.Close()
	cycles, err := ParseGCTrace(f, start)
	if err != nil || len(cycles) == 0 {
		t.Errorf("apiserver gctrace: %d garbage collections read from %s (%v)", len(cycles), logPath, err)
		return
	}
	out, err := os.Create(tsvPath)
	if err != nil {
		t.Errorf("apiserver gctrace: %v", err)
		return
	}
	defer out.Close()
	if err := WriteGCTSV(out, cycles); err != nil {
		t.Errorf("apiserver gctrace: %v", err)
		return
	}
	t.Logf("apiserver: %d garbage collections, written to %s", len(cycles), tsvPath)
}

package load

import (
	"context"
	"flag"
	"fmt"
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

// Flags size the run. `go test ./test/load` runs a small smoke; `make load` runs the default size
// (1,000 WECs × 100 objects).
var (
	flagWECs         = flag.Int("load.wecs", 10, "number of simulated WECs")
	flagObjects      = flag.Int("load.objects", 10, "number of workload objects (each goes to every WEC)")
	flagUpdates      = flag.Int("load.updates", 300, "WorkStatus updates in the latency phase")
	flagRate         = flag.Float64("load.rate", 0, "update rate per second for latency phases (0: half the apiserver's measured maximum)")
	flagWorkers      = flag.Int("load.workers", 8, "concurrent writers")
	flagMaxRateFor   = flag.Duration("load.max-rate-for", 3*time.Second, "how long to write at the maximum rate")
	flagBaselineNS   = flag.Int("load.baseline-namespaces", 5, "namespaces of baseline WorkStatus objects")
	flagBaselineObjs = flag.Int("load.baseline-objects", 40, "baseline WorkStatus objects per namespace")
	flagReport       = flag.String("load.report", "", "write the JSON report to this file (default: a temp file)")
	flagMultiEvery   = flag.Int("load.multi-every", 10, "every N-th object also gets its status aggregated from all WECs")
	flagCoalesce     = flag.Duration("load.coalesce", aggregator.DefaultCoalesceDelay, "the manager's --coalesce-delay")
	flagMgrWorkers   = flag.Int("load.manager-workers", aggregator.DefaultWorkers, "the manager's --workers")
	flagSettle       = flag.Duration("load.settle", 2*time.Minute, "how long statusfold may take to reflect every write of a phase")
	flagAPIProfile   = flag.Bool("load.apiserver-profile", false, "run the apiserver with --profiling and take its CPU profile over the paced phase")
	flagProfileDir   = flag.String("load.profile-dir", "", "write cpu.pprof and heap.pprof of the manager here (default: a temp folder)")
)

func TestMain(m *testing.M) {
	if RunManagerHelper() {
		return
	}
	flag.Parse()
	os.Exit(m.Run())
}

func TestLoad(t *testing.T) {
	framework.RequireIntegration(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	rep := &Report{
		Started: began.UTC(),
		Machine: Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()},
		Size: Size{
			WECs: *flagWECs, Objects: *flagObjects, WorkStatuses: *flagWECs * *flagObjects,
			Updates: *flagUpdates, UpdateRate: *flagRate,
		},
	}
	var cpOpts []framework.Option
	if *flagAPIProfile {
		cpOpts = append(cpOpts, framework.WithAPIServerFlag("profiling", "true"))
	}
	cp := framework.RunControlPlane(t, cpOpts...)
	apiserverPID := 0
	if u, err := url.Parse(cp.Config.Host); err == nil {
		apiserverPID = FindAPIServer(u.Port())
	}
	if apiserverPID == 0 {
		rep.Notes = append(rep.Notes, "kube-apiserver process not found: its CPU time is not measured")
	}

	fx := &Fixture{WECs: *flagWECs, Objects: *flagObjects, MultiEvery: *flagMultiEvery, Workers: *flagWorkers, Logf: t.Logf}
	populate, err := fx.Setup(ctx, cp.Config)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("populating %d WorkStatuses took %s", rep.Size.WorkStatuses, populate.Round(time.Second)))

	base, err := RunBaseline(ctx, cp.Config, BaselineConfig{
		Namespaces: *flagBaselineNS, ObjectsPerNamespace: *flagBaselineObjs,
		Workers: *flagWorkers, MaxRateDuration: *flagMaxRateFor,
		LatencyWrites: *flagUpdates, LatencyRate: *flagRate,
		APIServerPID: apiserverPID, Logf: t.Logf,
	})
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	rep.Baseline = base
	rep.Size.UpdateRate = base.LatencyRate
	checkBaseline(t, base, *flagUpdates)

	profDir := *flagProfileDir
	if profDir == "" {
		profDir = t.TempDir()
	}
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(profDir, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	mgr, err := StartManager(ctx, ManagerOptions{Kubeconfig: cp.Kubeconfig, CoalesceDelay: *flagCoalesce, Workers: *flagMgrWorkers, Log: logFile})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	defer mgr.Stop()
	var apiProfile *rest.Config
	if *flagAPIProfile {
		apiProfile = cp.Config
	}
	sf, err := RunStatusfold(ctx, fx, mgr, StatusfoldConfig{
		Updates: *flagUpdates, Rate: base.LatencyRate, MaxRateFor: *flagMaxRateFor,
		Settle: *flagSettle, ProfileDir: profDir, Seed: 1, APIServerPID: apiserverPID,
		APIServerProfile: apiProfile,
	}, t.Logf)
	if err != nil {
		t.Fatalf("statusfold: %v (manager log: %s)", err, logFile.Name())
	}
	sf.CoalesceDelay = *flagCoalesce
	rep.Statusfold = sf
	rep.Notes = append(rep.Notes, "profiles and manager log in "+profDir)
	rep.ComputeRatios()
	rep.Duration = time.Since(began)
	var table strings.Builder
	rep.PrintTable(&table)
	t.Log("\n" + table.String())
	path := *flagReport
	if path == "" {
		path = filepath.Join(t.TempDir(), "load-report.json")
	}
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("report written to %s", path)
}

// checkBaseline fails the test when the baseline measurement is not usable: writes lost on the
// watch, or no writes at all.
func checkBaseline(t *testing.T, b *BaselineResult, updates int) {
	t.Helper()
	if b.MaxWriteRate <= 0 || b.WriteRTT.Count == 0 {
		t.Errorf("no writes at the maximum rate: %+v", b)
	}
	if b.WriteToWatch.Count != updates {
		t.Errorf("write→watch samples = %d, want %d", b.WriteToWatch.Count, updates)
	}
	// An unseen write counts as the 30 s timeout: the watch must deliver every write.
	if b.WriteToWatch.Max >= 30*time.Second || b.WatchAtMaxRate.Max >= 30*time.Second {
		t.Errorf("some writes never reached the watch: %s / %s", b.WriteToWatch, b.WatchAtMaxRate)
	}
}

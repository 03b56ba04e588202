package load

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// lat is a Latency with n samples and the given p99.
func lat(n int, p99 time.Duration) Latency {
	return Latency{Count: n, P50: p99 / 2, P95: p99, P99: p99, Max: p99, Mean: p99 / 2}
}

// completeReport is a report with every figure present: L1 at 2.5× its baseline (MISS), the
// rest within their limits.
func completeReport() *Report {
	msd := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cost := Cost{WritesPerUpdate: 0.5, ManagerCPUPerUpdate: msd(1), APIServerCPUPerUpdate: msd(6)}
	windows := []Window{
		{Start: 0, End: 10 * time.Second, Reflected: 900, Staleness: lat(900, msd(400))},
		{Start: 10 * time.Second, End: 20 * time.Second, Reflected: 900, Staleness: lat(900, msd(500))},
	}
	return &Report{
		Size: Size{Window: 10 * time.Second},
		Baseline: &BaselineResult{
			Writers: 8, IdleCPUPerSec: 0.05,
			MaxRate: MaxRatePhase{Duration: 10 * time.Second, Writes: 4000, RatePerSec: 400, RTT: lat(4000, msd(60)),
				WriteToWatch: lat(4000, msd(50)), Drain: 0, APIServerCPUPerWrite: msd(4)},
			L1:   PacedPhase{RatePerSec: 40, Writes: 1000, WriteToWatch: lat(1000, msd(20)), APIServerCPUPerWrite: msd(5)},
			List: ListPhase{Objects: 100000, PageSize: 1000, Took: 3 * time.Second, BytesPerObject: 2000},
		},
		Statusfold: &StatusfoldResult{
			L1: L1Result{RatePerSec: 40, Updates: 1000, CombinedStatus: lat(1000, msd(50)), Returned: lat(100, msd(30)), Cost: cost},
			L2: L2Result{Writers: 8, Duration: 20 * time.Second, Updates: 1800, WriteRatePerSec: 90, Windows: windows, Trend: TrendOf(windows),
				Drain: msd(300), SustainedRatePerSec: 88, Cost: cost, APIServerCPUAddedPerUpdate: msd(2), APIServerIdleCPUPerUpdate: msd(1)},
			L3: L3Result{WorkStatuses: 100000, InitialSync: 8 * time.Second, InitialSyncReturned: 8 * time.Second,
				PeakRSS: 350_000_000, BytesPerWorkStatus: 3500, HeapInuse: 200_000_000},
		},
	}
}

func TestEvaluate(t *testing.T) {
	r := completeReport()
	r.Evaluate()
	type verdict struct {
		ratio float64
		pass  bool
	}
	want := map[string]verdict{
		"L1 p99 write→CombinedStatus":                      {2.5, false}, // 50 ms vs 20 ms
		"L1 p99 write→returned status (multi-WEC)":         {1.5, true},  // 30 ms vs 20 ms
		"L2 p99 staleness, worst 10s window":               {10, true},   // 500 ms ≤ 2 s, whatever the ratio
		"L2 p99 staleness growth, first→last window (fit)": {0, true},    // +100 ms ≤ 200 ms
		"L2 every update reflected after writers stop":     {0, true},    // baseline drain 0: no ratio
		"L2 apiserver CPU statusfold adds per update":      {0.5, true},  // 2 ms of 4 ms, at the limit
		"L3 manager peak RSS per WorkStatus":               {1.75, true}, // 3,500 B ≤ 4,000 B
		"L3 initial sync of every WorkStatus":              {8.0 / 3, true},
	}
	if len(r.Targets) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(r.Targets), len(want), r.Targets)
	}
	for _, tg := range r.Targets {
		name := tg.Phase + " " + tg.Name
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected target %q", name)
			continue
		}
		if diff := tg.Ratio - w.ratio; diff > 1e-9 || diff < -1e-9 || tg.Pass != w.pass {
			t.Errorf("%s: ratio %v, pass %v; want %v, %v", name, tg.Ratio, tg.Pass, w.ratio, w.pass)
		}
	}
	if missing := r.Incomplete(); len(missing) > 0 {
		t.Errorf("complete report reported incomplete: %v", missing)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("report does not marshal: %v", err)
	}
	var out strings.Builder
	r.PrintTable(&out)
	if got := strings.Count(out.String(), "PASS") + strings.Count(out.String(), "MISS"); got != len(want) {
		t.Errorf("table shows %d verdicts, want %d:\n%s", got, len(want), out.String())
	}
}

func TestIncomplete(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(r *Report)
		want   string // a substring of one of the missing figures
	}{
		{"no returned-status samples", func(r *Report) { r.Statusfold.L1.Returned = Latency{} }, "L1 write→returned status samples"},
		{"apiserver CPU not measured", func(r *Report) { r.Baseline.MaxRate.APIServerCPUPerWrite = 0 }, "baseline apiserver CPU per write at max rate"},
		{"an empty window", func(r *Report) { r.Statusfold.L2.Windows[1].Staleness = Latency{} }, "L2 window 1 staleness samples"},
		{"no windows", func(r *Report) { r.Statusfold.L2.Windows = nil }, "L2 windows"},
		{"no peak RSS", func(r *Report) { r.Statusfold.L3.PeakRSS = 0 }, "L3 peak RSS"},
		{"no statusfold", func(r *Report) { r.Statusfold = nil }, "statusfold"},
		{"negative idle CPU", func(r *Report) { r.Baseline.IdleCPUPerSec = -0.01 }, "baseline apiserver idle CPU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := completeReport()
			tt.break_(r)
			r.Evaluate()
			missing := r.Incomplete()
			if !slices.ContainsFunc(missing, func(m string) bool { return strings.Contains(m, tt.want) }) {
				t.Errorf("Incomplete() = %v, want an entry about %q", missing, tt.want)
			}
		})
	}
}

// TestIdleCPUMayBeNone: an idle apiserver can use no CPU tick over a short idle window (the
// smoke test's 2 s); the report is complete then.
func TestIdleCPUMayBeNone(t *testing.T) {
	r := completeReport()
	r.Baseline.IdleCPUPerSec = 0
	r.Statusfold.L2.APIServerIdleCPUPerUpdate = 0
	r.Evaluate()
	if missing := r.Incomplete(); len(missing) > 0 {
		t.Errorf("a report with no idle CPU is incomplete: %v", missing)
	}
}

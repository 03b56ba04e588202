package load

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"
	"time"
)

// Report is the load test's result, printed as tables and written as JSON.
type Report struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Machine  Machine       `json:"machine"`
	Size     Size          `json:"size"`
	Manager  ManagerFlags  `json:"manager"`
	// Populate is the time the fixture's WorkStatuses took to create, with a status each.
	Populate time.Duration `json:"populate"`
	// Baseline is the apiserver alone.
	Baseline *BaselineResult `json:"baseline,omitempty"`
	// Statusfold is the manager under load; nil when it was not run.
	Statusfold *StatusfoldResult `json:"statusfold,omitempty"`
	// Targets are the rows of docs/performance.md's verdict table, each against its baseline;
	// filled by Evaluate.
	Targets []Target `json:"targets"`
	// Notes say what was not measured and why.
	Notes []string `json:"notes,omitempty"`
}

// Machine describes where the test ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"goVersion"`
}

// Size is the load test's configuration.
type Size struct {
	WECs            int `json:"wecs"`
	Objects         int `json:"objects"`
	WorkStatuses    int `json:"workStatuses"`
	MultiWECObjects int `json:"multiWECObjects"`
	Writers         int `json:"writers"`
	// L1Updates are paced at L1Fraction of the baseline's maximum write rate (or at a rate
	// given by flag).
	L1Updates  int     `json:"l1Updates"`
	L1Fraction float64 `json:"l1Fraction"`
	// L2For is how long L2's writers write; Window the length of its staleness windows.
	L2For  time.Duration `json:"l2Duration"`
	Window time.Duration `json:"window"`
}

// ManagerFlags are the manager's settings under test.
type ManagerFlags struct {
	CoalesceDelay time.Duration `json:"coalesceDelay"`
	MaxWriteDelay time.Duration `json:"maxWriteDelay"`
	Workers       int           `json:"workers"`
	GCPercent     int           `json:"gcPercent"`
	// StartupGCPercent is the manager's --startup-gc-percent (until its first pass is done).
	StartupGCPercent int `json:"startupGCPercent"`
}

// Target is one row of docs/performance.md's verdict table: a measured figure, the same run's
// baseline for it, their ratio, and the limit, which applies to the ratio (OnRatio) or to the
// figure itself.
type Target struct {
	Phase string `json:"phase"`
	Name  string `json:"name"`
	// Unit is "s" (seconds) or "B" (bytes), for Measured, Baseline and an absolute Limit.
	Unit     string  `json:"unit"`
	Measured float64 `json:"measured"`
	// Baseline is what it is compared with (BaselineName); Ratio is Measured/Baseline, 0 when
	// the baseline is 0.
	Baseline     float64 `json:"baseline"`
	BaselineName string  `json:"baselineName,omitempty"`
	Ratio        float64 `json:"ratio"`
	Limit        float64 `json:"limit"`
	OnRatio      bool    `json:"limitOnRatio"`
	Pass         bool    `json:"pass"`
	// Detail is more of the measurement, for people.
	Detail string `json:"detail,omitempty"`
}

// Limits of the targets (docs/performance.md, "Reproducing the figures: `make load`").
const (
	LimitLatencyRatio  = 2.0
	LimitStaleness     = 2 * time.Second
	LimitGrowth        = 200 * time.Millisecond // 10 % of LimitStaleness over L2
	LimitDrain         = 2 * time.Second
	LimitAddedCPURatio = 0.5
	LimitBytesPerWS    = 4000
	LimitInitialSync   = 10 * time.Second
	targetsPerFullRun  = 8
)

// Evaluate fills r.Targets from the baseline and statusfold results.
func (r *Report) Evaluate() {
	r.Targets = nil
	b, s := r.Baseline, r.Statusfold
	if b == nil || s == nil {
		return
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	add := func(t Target) {
		if t.Baseline > 0 {
			t.Ratio = t.Measured / t.Baseline
		}
		v := t.Measured
		if t.OnRatio {
			v = t.Ratio
		}
		t.Pass = !math.IsNaN(v) && v <= t.Limit && (!t.OnRatio || t.Baseline > 0)
		r.Targets = append(r.Targets, t)
	}
	l1, l2, l3 := s.L1, s.L2, s.L3
	same := fmt.Sprintf("apiserver write→watch p99 at %.0f/s", b.L1.RatePerSec)
	add(Target{Phase: "L1", Name: "p99 write→CombinedStatus", Unit: "s", Measured: sec(l1.CombinedStatus.P99),
		Baseline: sec(b.L1.WriteToWatch.P99), BaselineName: same, Limit: LimitLatencyRatio, OnRatio: true,
		Detail: fmt.Sprintf("%d updates at %.0f/s", l1.CombinedStatus.Count, l1.RatePerSec)})
	add(Target{Phase: "L1", Name: "p99 write→returned status (multi-WEC)", Unit: "s", Measured: sec(l1.Returned.P99),
		Baseline: sec(b.L1.WriteToWatch.P99), BaselineName: same, Limit: LimitLatencyRatio, OnRatio: true,
		Detail: fmt.Sprintf("%d updates of multi-WEC objects", l1.Returned.Count)})
	add(Target{Phase: "L2", Name: fmt.Sprintf("p99 staleness, worst %s window", r.Size.Window), Unit: "s", Measured: sec(l2.Trend.Worst),
		Baseline: sec(b.MaxRate.WriteToWatch.P99), BaselineName: "apiserver write→watch p99 at max rate", Limit: sec(LimitStaleness),
		Detail: fmt.Sprintf("%d writers, %d updates at %.0f/s", l2.Writers, l2.Updates, l2.WriteRatePerSec)})
	add(Target{Phase: "L2", Name: "p99 staleness growth, first→last window (fit)", Unit: "s", Measured: sec(l2.Trend.Growth),
		Limit:  sec(LimitGrowth),
		Detail: fmt.Sprintf("first %s, last %s, slope %s/min", fmtValue("s", sec(l2.Trend.First)), fmtValue("s", sec(l2.Trend.Last)), fmtValue("s", sec(l2.Trend.SlopePerMinute)))})
	add(Target{Phase: "L2", Name: "every update reflected after writers stop", Unit: "s", Measured: sec(l2.Drain),
		Baseline: sec(b.MaxRate.Drain), BaselineName: "apiserver: watch delivered every write", Limit: sec(LimitDrain),
		Detail: fmt.Sprintf("%d not reflected; sustained %.0f updates/s", l2.Unreflected, l2.SustainedRatePerSec)})
	add(Target{Phase: "L2", Name: "apiserver CPU statusfold adds per update", Unit: "s", Measured: sec(l2.APIServerCPUAddedPerUpdate),
		Baseline: sec(b.MaxRate.APIServerCPUPerWrite), BaselineName: "apiserver CPU per plain write, full speed", Limit: LimitAddedCPURatio, OnRatio: true,
		Detail: fmt.Sprintf("%s per update in all, of which idle %s; %.2f writes per update",
			fmtValue("s", sec(l2.APIServerCPUPerUpdate)), fmtValue("s", sec(l2.APIServerIdleCPUPerUpdate)), l2.WritesPerUpdate)})
	add(Target{Phase: "L3", Name: "manager peak RSS per WorkStatus", Unit: "B", Measured: l3.BytesPerWorkStatus,
		Baseline: b.List.BytesPerObject, BaselineName: "a WorkStatus's JSON as served", Limit: LimitBytesPerWS,
		Detail: fmt.Sprintf("peak RSS %.0f MiB for %d WorkStatuses", float64(l3.PeakRSS)/(1<<20), l3.WorkStatuses)})
	add(Target{Phase: "L3", Name: "initial sync of every WorkStatus", Unit: "s", Measured: sec(l3.InitialSync),
		Baseline: sec(b.List.Took), BaselineName: fmt.Sprintf("plain list of every WorkStatus, %d per page", b.List.PageSize), Limit: sec(LimitInitialSync),
		Detail: fmt.Sprintf("returned statuses synced after %s", fmtValue("s", sec(l3.InitialSyncReturned)))})
}

// Figure is one number of the report that must be present.
type Figure struct {
	Name  string
	Value float64
	// Positive: the figure must be above 0; NonNegative: at least 0 (a CPU time that can
	// truly be none, such as an idle apiserver's over a short window: CPU time is counted in
	// 10 ms ticks); otherwise it only has to be finite (e.g. a difference, which noise can make
	// negative).
	Positive, NonNegative bool
}

// Figures lists every number that the targets and the docs' reading of the report need.
func (r *Report) Figures() []Figure {
	var fs []Figure
	pos := func(name string, v float64) { fs = append(fs, Figure{Name: name, Value: v, Positive: true}) }
	nonneg := func(name string, v float64) { fs = append(fs, Figure{Name: name, Value: v, NonNegative: true}) }
	fin := func(name string, v float64) { fs = append(fs, Figure{Name: name, Value: v}) }
	dur := func(name string, d time.Duration) { pos(name, d.Seconds()) }
	lat := func(name string, l Latency) {
		pos(name+" samples", float64(l.Count))
		dur(name+" p99", l.P99)
	}
	if b := r.Baseline; b != nil {
		nonneg("baseline apiserver idle CPU", b.IdleCPUPerSec)
		pos("baseline max rate", b.MaxRate.RatePerSec)
		lat("baseline write RTT at max rate", b.MaxRate.RTT)
		lat("baseline write→watch at max rate", b.MaxRate.WriteToWatch)
		fin("baseline watch drain", b.MaxRate.Drain.Seconds())
		dur("baseline apiserver CPU per write at max rate", b.MaxRate.APIServerCPUPerWrite)
		pos("baseline L1 rate", b.L1.RatePerSec)
		lat("baseline write→watch at L1 rate", b.L1.WriteToWatch)
		dur("baseline apiserver CPU per write at L1 rate", b.L1.APIServerCPUPerWrite)
		pos("baseline listed WorkStatuses", float64(b.List.Objects))
		dur("baseline list time", b.List.Took)
		pos("baseline bytes per WorkStatus", b.List.BytesPerObject)
	} else {
		fin("baseline", math.NaN())
	}
	cost := func(phase string, c Cost) {
		pos(phase+" writes per update", c.WritesPerUpdate)
		dur(phase+" manager CPU per update", c.ManagerCPUPerUpdate)
		dur(phase+" apiserver CPU per update", c.APIServerCPUPerUpdate)
	}
	if s := r.Statusfold; s != nil {
		lat("L1 write→CombinedStatus", s.L1.CombinedStatus)
		lat("L1 write→returned status", s.L1.Returned)
		cost("L1", s.L1.Cost)
		pos("L2 updates", float64(s.L2.Updates))
		pos("L2 windows", float64(len(s.L2.Windows)))
		for k, w := range s.L2.Windows {
			lat(fmt.Sprintf("L2 window %d staleness", k), w.Staleness)
		}
		fin("L2 staleness slope", s.L2.Trend.SlopePerMinute.Seconds())
		fin("L2 drain", s.L2.Drain.Seconds())
		pos("L2 sustained rate", s.L2.SustainedRatePerSec)
		cost("L2", s.L2.Cost)
		fin("L2 apiserver CPU added per update", s.L2.APIServerCPUAddedPerUpdate.Seconds())
		nonneg("L2 apiserver idle CPU per update", s.L2.APIServerIdleCPUPerUpdate.Seconds())
		dur("L3 initial sync", s.L3.InitialSync)
		dur("L3 initial sync of returned statuses", s.L3.InitialSyncReturned)
		pos("L3 peak RSS", float64(s.L3.PeakRSS))
		pos("L3 heap in use", float64(s.L3.HeapInuse))
	} else {
		fin("statusfold", math.NaN())
	}
	if len(r.Targets) != targetsPerFullRun {
		fin(fmt.Sprintf("targets (%d of %d)", len(r.Targets), targetsPerFullRun), math.NaN())
	}
	for _, t := range r.Targets {
		fin(t.Phase+" "+t.Name+" measured", t.Measured)
		fin(t.Phase+" "+t.Name+" ratio", t.Ratio)
		if t.OnRatio {
			pos(t.Phase+" "+t.Name+" baseline", t.Baseline)
		}
	}
	return fs
}

// Incomplete names the figures that are missing: not finite, or not above 0 where they must be.
func (r *Report) Incomplete() []string {
	var out []string
	for _, f := range r.Figures() {
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || (f.Positive && f.Value <= 0) || (f.NonNegative && f.Value < 0) {
			out = append(out, fmt.Sprintf("%s = %v", f.Name, f.Value))
		}
	}
	return out
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// fmtValue prints a figure in its unit: seconds as ms below 1 s, bytes as KB from 10,000.
func fmtValue(unit string, v float64) string {
	switch {
	case unit == "s" && math.Abs(v) < 1:
		return fmt.Sprintf("%.2f ms", v*1000)
	case unit == "s":
		return fmt.Sprintf("%.2f s", v)
	case unit == "B" && math.Abs(v) >= 10000:
		return fmt.Sprintf("%.1f KB", v/1000)
	case unit == "B":
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

// PrintTable prints the report for people: the targets, then the figures behind them.
func (r *Report) PrintTable(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttarget\tmeasured\tbaseline\tratio\tlimit\tresult\tdetail")
	for _, t := range r.Targets {
		base, ratio := "—", "—"
		if t.BaselineName != "" {
			base = fmtValue(t.Unit, t.Baseline) + " (" + t.BaselineName + ")"
		}
		if t.Baseline > 0 {
			ratio = fmt.Sprintf("%.2f", t.Ratio)
		}
		limit := "≤ " + fmtValue(t.Unit, t.Limit)
		if t.OnRatio {
			limit = fmt.Sprintf("ratio ≤ %g", t.Limit)
		}
		result := "MISS"
		if t.Pass {
			result = "PASS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Phase, t.Name, fmtValue(t.Unit, t.Measured), base, ratio, limit, result, t.Detail)
	}
	tw.Flush()
	fmt.Fprintln(out)

	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(v, args...)) }
	row("size", "%d WECs × %d objects = %d WorkStatuses (%d multi-WEC objects); %d writers", r.Size.WECs, r.Size.Objects, r.Size.WorkStatuses, r.Size.MultiWECObjects, r.Size.Writers)
	row("machine", "%d CPUs, %s; run took %s, populating %s", r.Machine.CPUs, r.Machine.GoVersion, r.Duration.Round(time.Second), r.Populate.Round(time.Second))
	row("manager", "--coalesce-delay=%s --max-write-delay=%s --workers=%d --gc-percent=%d --startup-gc-percent=%d", r.Manager.CoalesceDelay, r.Manager.MaxWriteDelay, r.Manager.Workers, r.Manager.GCPercent, r.Manager.StartupGCPercent)
	if b := r.Baseline; b != nil {
		row("apiserver: idle", "%.3f s of CPU per s", b.IdleCPUPerSec)
		row("apiserver: max rate", "%.0f writes/s for %s; RTT %s", b.MaxRate.RatePerSec, b.MaxRate.Duration.Round(time.Millisecond), b.MaxRate.RTT)
		row("apiserver: max rate write→watch", "%s; drain %s", b.MaxRate.WriteToWatch, ms(b.MaxRate.Drain))
		row("apiserver: max rate CPU", "%s per write", b.MaxRate.APIServerCPUPerWrite)
		row("apiserver: L1 write→watch", "%s @ %.0f/s; CPU %s per write", b.L1.WriteToWatch, b.L1.RatePerSec, b.L1.APIServerCPUPerWrite)
		row("apiserver: list all", "%d WorkStatuses in %s (%d per page), %.0f B of JSON each", b.List.Objects, b.List.Took.Round(time.Millisecond), b.List.PageSize, b.List.BytesPerObject)
	}
	if s := r.Statusfold; s != nil {
		cost := func(c Cost) string {
			return fmt.Sprintf("%.2f writes, manager CPU %s, apiserver CPU %s per update", c.WritesPerUpdate, c.ManagerCPUPerUpdate, c.APIServerCPUPerUpdate)
		}
		row("L1: write→CombinedStatus", "%s @ %.0f/s", s.L1.CombinedStatus, s.L1.RatePerSec)
		row("L1: write→returned status", "%s", s.L1.Returned)
		row("L1: cost", "%s", cost(s.L1.Cost))
		row("L2: writes", "%d updates in %s (%.0f/s), %d writers", s.L2.Updates, s.L2.Duration.Round(time.Millisecond), s.L2.WriteRatePerSec, s.L2.Writers)
		for _, w := range s.L2.Windows {
			row(fmt.Sprintf("L2: window %s–%s", w.Start, w.End), "%d reflected, %d outstanding at its end; staleness %s", w.Reflected, w.Outstanding, w.Staleness)
		}
		row("L2: trend of p99", "first %s, last %s, worst %s; slope %s per minute, rise %s", ms(s.L2.Trend.First), ms(s.L2.Trend.Last), ms(s.L2.Trend.Worst), ms(s.L2.Trend.SlopePerMinute), ms(s.L2.Trend.Growth))
		row("L2: drain", "%s after the writers stopped (%d not reflected); sustained %.0f updates/s", ms(s.L2.Drain), s.L2.Unreflected, s.L2.SustainedRatePerSec)
		row("L2: cost", "%s; statusfold adds %s; idle apiserver CPU %s per update", cost(s.L2.Cost), s.L2.APIServerCPUAddedPerUpdate, s.L2.APIServerIdleCPUPerUpdate)
		row("L3: initial sync", "CombinedStatuses %s, returned statuses %s", s.L3.InitialSync.Round(time.Millisecond), s.L3.InitialSyncReturned.Round(time.Millisecond))
		row("L3: idle after the sync", "%s later (write delay 0, objects queue empty; L1 starts then)%s", s.L3.Idle.Round(time.Millisecond), map[bool]string{true: " — not within the bound: L1 started anyway"}[s.L3.IdleTimedOut])
		row("L3: peak RSS", "%.0f MiB, %.0f B per WorkStatus", float64(s.L3.PeakRSS)/(1<<20), s.L3.BytesPerWorkStatus)
		row("L3: heap in use", "%.0f MiB (informers %.0f MiB, own caches %.0f MiB)", float64(s.L3.HeapInuse)/(1<<20), float64(s.L3.InformerBytes)/(1<<20), float64(s.L3.CacheBytes)/(1<<20))
		for _, h := range s.HotSpots {
			row("L2: cpu hot spot", "%5.1f%% cum %5.1f%% flat  %s", h.CumPct, h.FlatPct, h.Function)
		}
	}
	for _, n := range r.Notes {
		row("note", "%s", n)
	}
	tw.Flush()
}

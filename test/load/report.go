package load

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// Report is the load test's result, printed as a table and written as JSON.
type Report struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Machine  Machine       `json:"machine"`
	Size     Size          `json:"size"`
	// Baseline is the apiserver alone.
	Baseline *BaselineResult `json:"baseline,omitempty"`
	// Statusfold is the manager under load; nil when it was not run.
	Statusfold *StatusfoldResult `json:"statusfold,omitempty"`
	// Ratios are the headline numbers; zero when Statusfold is nil.
	Ratios Ratios `json:"ratios"`
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
	WECs          int     `json:"wecs"`
	Objects       int     `json:"objects"`
	WorkStatuses  int     `json:"workStatuses"`
	MultiFraction float64 `json:"multiWECFraction"`
	Updates       int     `json:"updates"`
	UpdateRate    float64 `json:"updateRatePerSec"`
}

// StatusfoldResult is what the manager achieves.
type StatusfoldResult struct {
	// InitialSync is the time from manager start until every CombinedStatus reflected the
	// populated WorkStatuses.
	InitialSync time.Duration `json:"initialSync"`
	// CombinedStatus is WorkStatus write → CombinedStatus reflecting it, at UpdateRate.
	CombinedStatus Latency `json:"writeToCombinedStatus"`
	// Returned is WorkStatus write → the workload object's .status reflecting it (multi-WEC
	// objects, aggregated), at UpdateRate.
	Returned Latency `json:"writeToReturnedStatus"`
	// SustainedRate is the highest update rate whose effects the manager kept up with, per second.
	SustainedRate float64 `json:"sustainedUpdateRatePerSec"`
	// WritesPerUpdate is apiserver writes by the manager per WorkStatus update.
	WritesPerUpdate float64 `json:"writesPerUpdate"`
	// CPUSeconds is the manager's CPU time over the update phase; CPUPerUpdate divides it.
	CPUSeconds   float64       `json:"cpuSeconds"`
	CPUPerUpdate time.Duration `json:"cpuPerUpdate"`
	// APIServerCPUPerUpdate is the apiserver's CPU time per update over the update phase: the
	// update's own write plus everything statusfold makes the apiserver do for it (watch
	// events, its writes); compare with Baseline.APIServerCPUPerWrite. 0: not measured.
	APIServerCPUPerUpdate time.Duration `json:"apiserverCPUPerUpdate"`
	// PeakRSS is the manager's peak resident set, bytes; HeapInuse its live heap after a GC.
	PeakRSS   int64 `json:"peakRSSBytes"`
	HeapInuse int64 `json:"heapInuseBytes"`
	// BytesPerWorkStatus is PeakRSS divided by the number of WorkStatus objects.
	BytesPerWorkStatus float64 `json:"bytesPerWorkStatus"`
	// InformerBytes and CacheBytes split the heap between informer caches and statusfold's
	// own caches, as attributed by a heap profile; zero when not measured.
	InformerBytes int64 `json:"informerBytes"`
	CacheBytes    int64 `json:"cacheBytes"`
	// HotSpots are the top functions of a CPU profile taken at the maximum rate.
	HotSpots []HotSpot `json:"hotSpots,omitempty"`
	// CoalesceDelay is the manager's --coalesce-delay.
	CoalesceDelay time.Duration `json:"coalesceDelay"`
}

// Ratios are the headline numbers with their targets.
type Ratios struct {
	// P99 is statusfold's write→CombinedStatus p99 ÷ the apiserver's write→watch p99 (target ≤ 2).
	P99 float64 `json:"p99Ratio"`
	// Rate is statusfold's sustained update rate ÷ the raw write rate (target ≥ 0.8).
	Rate float64 `json:"rateRatio"`
}

// ComputeRatios fills r.Ratios from the baseline and statusfold results.
func (r *Report) ComputeRatios() {
	if r.Baseline == nil || r.Statusfold == nil {
		return
	}
	if p := r.Baseline.WriteToWatch.P99; p > 0 {
		r.Ratios.P99 = float64(r.Statusfold.CombinedStatus.P99) / float64(p)
	}
	if r.Baseline.MaxWriteRate > 0 {
		r.Ratios.Rate = r.Statusfold.SustainedRate / r.Baseline.MaxWriteRate
	}
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// PrintTable prints the report for people.
func (r *Report) PrintTable(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(v, args...)) }
	row("size", "%d WECs × %d objects = %d WorkStatuses, %d updates at %.0f/s", r.Size.WECs, r.Size.Objects, r.Size.WorkStatuses, r.Size.Updates, r.Size.UpdateRate)
	row("machine", "%d CPUs, %s; run took %s", r.Machine.CPUs, r.Machine.GoVersion, r.Duration.Round(time.Second))
	if b := r.Baseline; b != nil {
		row("apiserver: objects", "%d", b.Objects)
		row("apiserver: create rate", "%.0f/s", b.CreateRate)
		row("apiserver: max write rate", "%.0f/s (RTT %s)", b.MaxWriteRate, b.WriteRTT)
		row("apiserver: write→watch @max", "%s", b.WatchAtMaxRate)
		row("apiserver: write→watch", "%s @ %.0f/s", b.WriteToWatch, b.LatencyRate)
		row("apiserver: CPU per write", "%s", b.APIServerCPUPerWrite)
	}
	if s := r.Statusfold; s != nil {
		row("statusfold: initial sync", "%s", s.InitialSync.Round(time.Millisecond))
		row("statusfold: write→CombinedStatus", "%s", s.CombinedStatus)
		row("statusfold: write→returned status", "%s", s.Returned)
		row("statusfold: sustained rate", "%.0f updates/s", s.SustainedRate)
		row("statusfold: writes per update", "%.2f", s.WritesPerUpdate)
		row("statusfold: CPU", "%.1f s, %s per update", s.CPUSeconds, s.CPUPerUpdate)
		row("statusfold: apiserver CPU", "%s per update", s.APIServerCPUPerUpdate)
		row("statusfold: peak RSS", "%.0f MiB, %.0f B per WorkStatus", float64(s.PeakRSS)/(1<<20), s.BytesPerWorkStatus)
		row("statusfold: heap in use", "%.0f MiB (informers %.0f MiB, own caches %.0f MiB)", float64(s.HeapInuse)/(1<<20), float64(s.InformerBytes)/(1<<20), float64(s.CacheBytes)/(1<<20))
		row("statusfold: coalesce delay", "%s", s.CoalesceDelay)
		row("ratio p99 (target ≤ 2)", "%.2f", r.Ratios.P99)
		row("ratio rate (target ≥ 0.8)", "%.2f", r.Ratios.Rate)
	}
	if s := r.Statusfold; s != nil {
		for _, h := range s.HotSpots {
			row("cpu hot spot", "%5.1f%% cum %5.1f%% flat  %s", h.CumPct, h.FlatPct, h.Function)
		}
	}
	for _, n := range r.Notes {
		row("note", "%s", n)
	}
	tw.Flush()
}

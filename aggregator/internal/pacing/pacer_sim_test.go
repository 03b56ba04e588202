package pacing

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The costs a load run measured on 2 cores: the plain maximum of 417 writes/s (so
// 4.8 ms of apiserver CPU per plain update), and 12.2 − 4.37 = 7.83 ms of apiserver CPU added
// per update at 0.51 manager writes per update, so ≈15.4 ms per manager write (the isolated
// CombinedStatus apply is 6.75 ms; at load every write costs more, as the plain one does).
var loadRunModel = simConfig{keys: 100, cores: 2, workers: 4, plainCost: 4800 * time.Microsecond,
	csCost: 15400 * time.Microsecond, writers: 8, duration: 60 * time.Second, seed: 1}

// simLoads are the loads TestPacerSimulation runs.
var simLoads = []struct {
	name   string
	rate   float64
	csCost time.Duration // 0: the model's
	keys   int           // 0: the model's
	busy   bool          // one of the two cores busy elsewhere from 12 s to 42 s
}{
	{"10% paced", 0.1 * simPlainMax, 0, 0, false},
	// light load while the apiserver is short of a core (its garbage collection, another
	// client): the write latency rises, D with it, but at ≈0.5 updates per key per second
	// waiting folds few updates
	{"10%, 1 core", 0.1 * simPlainMax, 0, 0, true},
	{"50% paced", 0.5 * simPlainMax, 0, 0, false},
	{"full speed", 0, 0, 0, false},
	// what a CombinedStatus write at the plain write's cost would give ("write cheaper")
	{"full, cs 4.8ms", 0, loadRunModel.plainCost, 0, false},
	// 10× the objects: the workers' write throughput, not the delay, bounds staleness
	{"full, 1000 keys", 0, 0, 1000, false},
}

// simPolicies are the pacing policies TestPacerSimulation compares.
var simPolicies = []struct {
	name string
	make func() simPolicy
}{
	{"delay 0", func() simPolicy { return &fixedDelay{last: map[int]time.Time{}} }},
	{"fixed 1s", func() simPolicy { return &fixedDelay{d: time.Second, last: map[int]time.Time{}} }},
	{"adaptive", func() simPolicy { return NewPacer[int](PacerOptions{}) }},
	// without the MinFold rule: every key waits out D, however few updates that folds
	{"no-fold", func() simPolicy { return NewPacer[int](PacerOptions{MinFold: -1}) }},
}

// simPlainMax is the model's plain maximum rate: updates per second with every core serving them.
var simPlainMax = float64(loadRunModel.cores) / loadRunModel.plainCost.Seconds()

// runSimulations runs every load under every policy, logs the table, and returns the results
// by "load/policy".
func runSimulations(t *testing.T) map[string]simResult {
	var out strings.Builder
	fmt.Fprintf(&out, "model: %d keys, %d cores, %d workers, plain write %s, CombinedStatus write %s (plain max %.0f/s)\n",
		loadRunModel.keys, loadRunModel.cores, loadRunModel.workers, loadRunModel.plainCost, loadRunModel.csCost, simPlainMax)
	fmt.Fprintf(&out, "%-15s %-9s %8s %8s %8s %8s %8s %9s %6s %s\n", "load", "policy", "upd/s", "wr/upd",
		"sf-cpu%", "p50", "p99", "max-delay", "busy", "p99 per 10 s window")
	results := map[string]simResult{}
	for _, l := range simLoads {
		for _, p := range simPolicies {
			cfg := loadRunModel
			cfg.rate = l.rate
			if l.csCost > 0 {
				cfg.csCost = l.csCost
			}
			if l.keys > 0 {
				cfg.keys = l.keys
			}
			if l.busy {
				cfg.busyFrom, cfg.busyFor, cfg.busyCores = 12*time.Second, 30*time.Second, 1
			}
			r := simulate(cfg, p.make())
			results[l.name+"/"+p.name] = r
			var ws []string
			for _, w := range r.windows {
				ws = append(ws, w.Round(10*time.Millisecond).String())
			}
			// sf-cpu%: apiserver CPU statusfold adds per update, as a share of a plain write (L2: ≤ 50 %).
			sf := r.writesPerUpdate() * float64(cfg.csCost) / float64(cfg.plainCost) * 100
			fmt.Fprintf(&out, "%-15s %-9s %8.0f %8.2f %7.0f%% %8s %8s %9s %5.0f%% %s\n", l.name, p.name, r.rate,
				r.writesPerUpdate(), sf, r.p(0.5).Round(time.Millisecond), r.p(0.99).Round(time.Millisecond),
				r.maxDelay.Round(time.Millisecond), r.busy*100, strings.Join(ws, " "))
		}
	}
	t.Log("\n" + out.String())
	return results
}

// TestPacerSimulation compares no delay, a fixed 1 s delay and the Pacer (with and without its
// MinFold rule) at 10 % and 50 % of the plain maximum rate (open loop; at 10 % also with one of
// the apiserver's two cores busy elsewhere for 30 s) and at full speed (8 closed-loop writers),
// in the model above. It logs the table that docs/performance.md quotes, and checks that the
// Pacer is as fast as no delay at light load, also while the apiserver is short of a core (where
// without MinFold it waited out D for little folding), and writes less than no delay at full
// speed, within the 2 s staleness target and without a growing backlog.
func TestPacerSimulation(t *testing.T) {
	results := runSimulations(t)
	light0, lightA := results["10% paced/delay 0"], results["10% paced/adaptive"]
	if lightA.p(0.99) > light0.p(0.99)+10*time.Millisecond || lightA.maxDelay != 0 {
		t.Errorf("10%%: adaptive p99 %s (largest delay %s), want within 10 ms of no delay's %s and no delay (immediate when idle)",
			lightA.p(0.99), lightA.maxDelay, light0.p(0.99))
	}
	busy0, busyA, busyN := results["10%, 1 core/delay 0"], results["10%, 1 core/adaptive"], results["10%, 1 core/no-fold"]
	if busyA.p(0.99) >= busyN.p(0.99) || busyA.p(0.99) > busy0.p(0.99)+50*time.Millisecond {
		t.Errorf("10%% with a core busy elsewhere: adaptive p99 %s, want below the Pacer's without MinFold (%s) and within 50 ms of no delay's %s",
			busyA.p(0.99), busyN.p(0.99), busy0.p(0.99))
	}
	for _, l := range []string{"full speed", "full, cs 4.8ms"} {
		r0, r1, rA := results[l+"/delay 0"], results[l+"/fixed 1s"], results[l+"/adaptive"]
		if rA.writesPerUpdate() >= r0.writesPerUpdate() || rA.writesPerUpdate() > 1.1*r1.writesPerUpdate() {
			t.Errorf("%s: adaptive %.3f writes/update, want below no delay's %.3f and within 10 %% of fixed 1 s's %.3f",
				l, rA.writesPerUpdate(), r0.writesPerUpdate(), r1.writesPerUpdate())
		}
	}
	for _, name := range []string{"50% paced/adaptive", "full speed/adaptive", "full, cs 4.8ms/adaptive"} {
		r := results[name]
		if p := r.p(0.99); p > 2*time.Second {
			t.Errorf("%s: p99 staleness %s, want ≤ 2 s", name, p)
		}
		if first, last := r.windows[1], r.windows[len(r.windows)-1]; last > first*3/2+100*time.Millisecond {
			t.Errorf("%s: p99 per window grows: %s in the second, %s in the last", name, first, last)
		}
	}
}

package pacing

import (
	"testing"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

func TestPacerSignals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcome  WriteOutcome
		latency  time.Duration
		depth    int
		wantHigh bool
	}{
		{"429s answered fast are overload", WriteOverloaded, time.Millisecond, 0, true},
		{"other failures say nothing", WriteFailed, time.Millisecond, 0, false},
		{"a deep queue is load", WriteSucceeded, 10 * time.Millisecond, 20, true},
		{"a queue in the dead band is not", WriteSucceeded, 10 * time.Millisecond, 10, false},
		{"latency in the dead band is not", WriteSucceeded, 20 * time.Millisecond, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newPacerDriver(PacerOptions{}, 5)
			d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
			d.p.SetQueueDepth(tc.depth, d.now)
			d.run(time.Second, 20*time.Millisecond, tc.latency, tc.outcome, nil)
			s := d.p.State(d.now)
			if high := s.Delay > 0; high != tc.wantHigh {
				t.Errorf("D = %s (state %+v); want D > 0: %v", s.Delay, s, tc.wantHigh)
			}
		})
	}
}

// TestPacerBacklogWorkedOff: once the workers have emptied the queue, a past backlog is not
// pressure: after the initial sync of the load test (≈2,000 keys queued for 10 s), D must fall
// back as soon as the queue is empty and the writes are at their floor, not after the queue's
// average depth has decayed below DepthLow (Smoothing·ln(2000/4) ≈ 3.1 s more).
func TestPacerBacklogWorkedOff(t *testing.T) {
	d := newPacerDriver(PacerOptions{}, 100)
	d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
	d.p.SetQueueDepth(2000, d.now)
	d.run(10*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
	if s := d.p.State(d.now); s.Delay != DefaultPacerMaxDelay {
		t.Fatalf("backlog: %+v, want D at the cap", s)
	}
	d.p.SetQueueDepth(0, d.now)
	check, zeroAt := d.zeroWatch()
	d.run(5*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, check)
	// From the cap, halving every 250 ms: 1.66 s to MinDelay.
	if z := zeroAt(); z < 0 || z > 2*time.Second {
		t.Fatalf("D back at 0 after %s, want within 2 s of the queue emptying (state %+v)", z, d.p.State(d.now))
	}
	t.Logf("D back at 0 after %s", zeroAt())
}

func TestPacerHoldsInTheDeadBand(t *testing.T) {
	d := newPacerDriver(PacerOptions{}, 10)
	d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
	d.run(600*time.Millisecond, 10*time.Millisecond, 80*time.Millisecond, WriteSucceeded, nil)
	// Latency at 2× the floor (inside 1.5–3×): once the EWMA has come down into the band (1 s),
	// D must not move for 30 s.
	d.run(time.Second, 10*time.Millisecond, 20*time.Millisecond, WriteSucceeded, nil)
	mid := d.p.State(d.now).Delay
	if mid == 0 || mid == DefaultPacerMaxDelay {
		t.Fatalf("setup: D = %s, want between 0 and the cap", mid)
	}
	d.run(30*time.Second, 10*time.Millisecond, 20*time.Millisecond, WriteSucceeded, func() {
		if s := d.p.State(d.now); s.Delay != mid || s.Load != "steady" {
			t.Fatalf("D moved from %s to %s in the dead band (%+v)", mid, s.Delay, s)
		}
	})
	if got := d.p.State(d.now).Delay; got != mid {
		t.Errorf("after 30 s in the dead band D = %s, want %s", got, mid)
	}
}

func BenchmarkPacer(b *testing.B) {
	p := NewPacer[rules.ObjectKey](PacerOptions{})
	keys := make([]rules.ObjectKey, 1000)
	for i := range keys {
		keys[i] = rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: pkey(i)}
	}
	now := pacerT0
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(100 * time.Microsecond)
		k := keys[i%len(keys)]
		p.Delay(k, now)
		p.ObserveWrite(k, WriteCombinedStatus, now.Add(-20*time.Millisecond), now, WriteSucceeded)
	}
}

// TestPacerStateOnlyReads: reading the state (as the statusfold_write_delay_seconds gauge does at
// every scrape) does not change how D moves. Two Pacers get the same writes, some of them sparse
// enough that the signals cross a threshold between two writes; one of them is also read every
// 10 ms. Their D must agree at every write. (With reads that advanced D, the decay after the slow writes differed: 295 ms
// against 144 ms at the same write.)
func TestPacerStateOnlyReads(t *testing.T) {
	plain, read := NewPacer[string](PacerOptions{}), NewPacer[string](PacerOptions{})
	same := func(a, b time.Duration) bool { return (a - b).Abs() <= 10*time.Microsecond } // float rounding aside
	now := pacerT0
	type step struct {
		gap, latency time.Duration
	}
	var steps []step
	for range 8 { // the floor: fast writes
		steps = append(steps, step{50 * time.Millisecond, 10 * time.Millisecond})
	}
	for range 14 { // slow writes: high load, D grows
		steps = append(steps, step{150 * time.Millisecond, 200 * time.Millisecond})
	}
	for range 3 { // slow writes a second apart: the signals relax between them
		steps = append(steps, step{time.Second, 200 * time.Millisecond})
	}
	for range 6 { // fast again, sparse: D decays
		steps = append(steps, step{700 * time.Millisecond, 10 * time.Millisecond})
	}
	grew := false
	for i, s := range steps {
		for at := now.Add(10 * time.Millisecond); at.Before(now.Add(s.gap)); at = at.Add(10 * time.Millisecond) {
			read.State(at)
		}
		now = now.Add(s.gap)
		plain.ObserveWrite("k", WriteCombinedStatus, now.Add(-s.latency), now, WriteSucceeded)
		read.ObserveWrite("k", WriteCombinedStatus, now.Add(-s.latency), now, WriteSucceeded)
		dp, dr := plain.State(now).Delay, read.State(now).Delay
		if !same(dp, dr) {
			t.Fatalf("write %d: D = %s with the state read every 10 ms, %s without", i, dr, dp)
		}
		grew = grew || dp == DefaultPacerMaxDelay
	}
	if !grew {
		t.Fatal("D never reached its cap: the scenario does not exercise the Pacer")
	}
}

// TestPacerMinFold: under load (D at its cap), a key waits only when the wait is expected to
// fold at least MinFold further updates into its write, by the key's own request rate (each
// Delay call is a request): a key asked for every 4 s is written at once, one asked for every
// 100 ms waits, unless what is left of its wait would fold fewer than half an update; a key
// never asked for before has no rate yet; requests closer together than 1 ms count once; and
// MinFold < 0 makes every key wait out D.
func TestPacerMinFold(t *testing.T) {
	for _, minFold := range []float64{0, -1} {
		d := newPacerDriver(PacerOptions{MinFold: minFold}, 1)
		d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
		d.run(3*time.Second, 5*time.Millisecond, 100*time.Millisecond, WriteSucceeded, nil)
		if D := d.p.State(d.now).Delay; D != time.Second {
			t.Fatalf("D %s, want the cap", D)
		}
		at := d.now
		// ask asks for k n times, every `every`, up to `written`, when k is written.
		ask := func(k string, every time.Duration, n int, written time.Time) {
			for i := n; i > 0; i-- {
				d.p.Delay(k, written.Add(-time.Duration(i)*every))
			}
			d.p.ObserveWrite(k, WriteCombinedStatus, written.Add(-time.Millisecond), written, WriteSucceeded)
		}
		ask("slow", 4*time.Second, 5, at)
		ask("fast", 100*time.Millisecond, 5, at)
		ask("fast, written 980 ms ago", 100*time.Millisecond, 5, at.Add(-980*time.Millisecond))
		ask("never asked", 0, 0, at)
		ask("burst", 100*time.Microsecond, 5, at)
		if ivl := d.p.reqs["burst"].ivl; ivl != 0 {
			t.Errorf("5 requests within 0.5 ms: interval %s, want none (one request)", ivl)
		}
		now := at.Add(time.Millisecond)
		D := d.p.State(now).Delay // the asks' fast writes moved it a little
		got := map[string]time.Duration{}
		for _, k := range []string{"slow", "fast", "fast, written 980 ms ago", "never asked"} {
			got[k] = d.p.Delay(k, now)
		}
		full, rest := D-time.Millisecond, D-981*time.Millisecond
		want := map[string]time.Duration{"slow": 0, "fast": full, "fast, written 980 ms ago": 0, "never asked": 0}
		if minFold < 0 {
			want = map[string]time.Duration{"slow": full, "fast": full, "fast, written 980 ms ago": rest, "never asked": full}
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("MinFold %v: %s waits %s, want %s", minFold, k, got[k], w)
			}
		}
	}
}

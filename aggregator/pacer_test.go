package aggregator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

var pacerT0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// pacerDriver drives a Pacer with an explicit clock: writes of a given latency at a given
// interval, round-robin over keys.
type pacerDriver struct {
	p    *Pacer[string]
	now  time.Time
	keys int
	n    int
}

func newPacerDriver(o PacerOptions, keys int) *pacerDriver {
	return &pacerDriver{p: NewPacer[string](o), now: pacerT0, keys: keys}
}

func pkey(i int) string { return fmt.Sprintf("k%d", i) }

// run writes, one every `every`, each taking latency, with the given outcome, for d; after
// each write it calls check (if not nil).
func (d *pacerDriver) run(dur, every, latency time.Duration, outcome WriteOutcome, check func()) {
	end := d.now.Add(dur)
	for d.now.Before(end) {
		d.now = d.now.Add(every)
		k := pkey(d.n % d.keys)
		d.n++
		d.p.ObserveWrite(k, WriteCombinedStatus, d.now.Add(-latency), d.now, outcome)
		if check != nil {
			check()
		}
	}
}

// zeroWatch returns a check, for run and the like, that records how long after now D is first
// 0, and a function that reads it (-1: not yet).
func (d *pacerDriver) zeroWatch() (check func(), zeroAt func() time.Duration) {
	start, at := d.now, time.Duration(-1)
	return func() {
			if at < 0 && d.p.State(d.now).Delay == 0 {
				at = d.now.Sub(start)
			}
		}, func() time.Duration {
			return at
		}
}

func TestPacerIdleIsImmediate(t *testing.T) {
	d := newPacerDriver(PacerOptions{}, 10)
	d.p.SetQueueDepth(2, d.now)
	// 100 writes/s at 8 ms, with a few slower ones (up to 2.5× the floor): still idle.
	for i := range 1000 {
		lat := 8 * time.Millisecond
		if i%10 == 0 {
			lat = 20 * time.Millisecond
		}
		d.run(10*time.Millisecond, 10*time.Millisecond, lat, WriteSucceeded, nil)
		if got := d.p.Delay(pkey((d.n-1)%d.keys), d.now); got != 0 {
			t.Fatalf("write %d: Delay of the key just written = %s, want 0 (idle: %+v)", i, got, d.p.State(d.now))
		}
	}
	if s := d.p.State(d.now); s.Delay != 0 || s.Load == "high" {
		t.Errorf("state after 10 s of idle writes: %+v, want Delay 0 and not high", s)
	}
}

func TestPacerGrowsToCapAndNotBeyond(t *testing.T) {
	o := PacerOptions{MaxDelay: time.Second}
	d := newPacerDriver(o, 20)
	d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil) // floor 10 ms
	var prev time.Duration
	reached := time.Duration(-1)
	start := d.now
	d.run(10*time.Second, 10*time.Millisecond, 100*time.Millisecond, WriteSucceeded, func() {
		s := d.p.State(d.now)
		if s.Delay > o.MaxDelay {
			t.Fatalf("at %s: D = %s, above the cap %s", d.now.Sub(start), s.Delay, o.MaxDelay)
		}
		if s.Delay < prev {
			t.Fatalf("at %s: D fell from %s to %s under sustained 10× latency", d.now.Sub(start), prev, s.Delay)
		}
		prev = s.Delay
		if s.Delay == o.MaxDelay && reached < 0 {
			reached = d.now.Sub(start)
		}
		k := pkey((d.n - 1) % d.keys)
		if got := d.p.Delay(k, d.now); got > o.MaxDelay {
			t.Fatalf("Delay = %s above the cap", got)
		}
	})
	// The EWMA crosses 3× the floor after a few writes; then 10 ms → 1 s is log2(100) ≈ 6.6
	// doublings of 250 ms.
	if reached < 0 || reached > 2500*time.Millisecond {
		t.Fatalf("D reached the cap after %s, want within 2.5 s (state %+v)", reached, d.p.State(d.now))
	}
	if got := d.p.Delay(pkey((d.n-1)%d.keys), d.now); got != o.MaxDelay {
		t.Errorf("Delay of the key just written = %s, want the cap %s", got, o.MaxDelay)
	}
}

func TestPacerRecovers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(d *pacerDriver, check func())
	}{
		{"writes back at the floor", func(d *pacerDriver, check func()) {
			d.run(10*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, check)
		}},
		{"no writes at all", func(d *pacerDriver, check func()) {
			for range 1000 {
				d.now = d.now.Add(10 * time.Millisecond)
				check()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newPacerDriver(PacerOptions{}, 20)
			d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
			d.p.SetQueueDepth(80, d.now)
			d.run(5*time.Second, 10*time.Millisecond, 200*time.Millisecond, WriteSucceeded, nil) // 20× the floor
			if s := d.p.State(d.now); s.Delay != DefaultPacerMaxDelay {
				t.Fatalf("before recovery: %+v, want D at the cap", s)
			}
			d.p.SetQueueDepth(0, d.now)
			check, zeroAt := d.zeroWatch()
			tc.after(d, check)
			if z := zeroAt(); z < 0 || z > 4*time.Second {
				t.Fatalf("D back at 0 after %s, want within 4 s (state %+v)", z, d.p.State(d.now))
			}
			t.Logf("D back at 0 after %s", zeroAt())
		})
	}
}

// TestPacerFloorPerKindAndRobust pins the floor's two properties: each kind of write is judged
// against its own usual latency, and a few writes faster than usual do not lower the floor. The
// light load here is the load test's L1 at 100,000 WorkStatuses (CombinedStatus applies at
// ≈20 ms, returned statuses at 4 ms, an occasional fast apply): with one floor for both kinds, or
// the least latency as the floor, the applies' ordinary 20 ms read as 2× the floor (the dead
// band) and D stayed where a burst had left it; here it must fall back to 0 as after any load.
func TestPacerFloorPerKindAndRobust(t *testing.T) {
	d := newPacerDriver(PacerOptions{}, 20)
	var i int
	light := func(check func()) {
		for range 1000 {
			d.now = d.now.Add(10 * time.Millisecond)
			k, kind, lat := pkey(i%d.keys), WriteCombinedStatus, 20*time.Millisecond
			switch {
			case i%5 == 0:
				kind, lat = WriteReturnedStatus, 4*time.Millisecond
			case i%31 == 0:
				lat = 3 * time.Millisecond
			}
			i++
			d.p.ObserveWrite(k, kind, d.now.Add(-lat), d.now, WriteSucceeded)
			if check != nil {
				check()
			}
		}
	}
	light(nil) // 10 s of light load: no pressure
	if s := d.p.State(d.now); s.Delay != 0 || s.Load != "idle" {
		t.Fatalf("light load: %+v, want D 0 and idle", s)
	}
	if s := d.p.State(d.now); s.Floor < 18*time.Millisecond {
		t.Errorf("floor %s, want the applies' usual ≈20 ms, not their fastest", s.Floor)
	}
	d.p.SetQueueDepth(80, d.now) // a burst: D to the cap
	d.run(3*time.Second, 10*time.Millisecond, 200*time.Millisecond, WriteSucceeded, nil)
	if s := d.p.State(d.now); s.Delay != DefaultPacerMaxDelay {
		t.Fatalf("burst: %+v, want D at the cap", s)
	}
	d.p.SetQueueDepth(0, d.now)
	check, zeroAt := d.zeroWatch()
	light(check)
	if zeroAt() < 0 {
		t.Fatalf("D not back at 0 after 10 s of light load: %+v", d.p.State(d.now))
	}
	t.Logf("D back at 0 after %s", zeroAt())
}

func TestPacerKeyNeverWaitsMoreThanCapAfterItsLastWrite(t *testing.T) {
	o := PacerOptions{MaxDelay: 700 * time.Millisecond}
	d := newPacerDriver(o, 7)
	d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil) // floor 10 ms
	lastWrite := map[string]time.Time{}
	d.run(20*time.Second, 3*time.Millisecond, 90*time.Millisecond, WriteSucceeded, func() {
		k := pkey((d.n - 1) % d.keys)
		lastWrite[k] = d.now
		for i := range d.keys {
			// asked at several points after each key's last write
			for _, ahead := range []time.Duration{0, time.Millisecond, 300 * time.Millisecond} {
				k := pkey(i)
				at := d.now.Add(ahead)
				got := d.p.Delay(k, at)
				if lw, ok := lastWrite[k]; ok && at.Add(got).Sub(lw) > o.MaxDelay {
					t.Fatalf("%s, last written %s before: Delay %s makes it wait %s after its last write, above the cap %s",
						k, at.Sub(lw), got, at.Add(got).Sub(lw), o.MaxDelay)
				}
			}
		}
	})
	if d.p.State(d.now).Delay != o.MaxDelay {
		t.Fatalf("the test did not reach the cap: %+v", d.p.State(d.now))
	}
}

func TestPacerFairness(t *testing.T) {
	d := newPacerDriver(PacerOptions{}, 1)
	d.run(2*time.Second, 10*time.Millisecond, 10*time.Millisecond, WriteSucceeded, nil)
	d.p.ObserveWrite("cold", WriteCombinedStatus, d.now.Add(-10*time.Millisecond), d.now, WriteSucceeded)
	d.p.ObserveWrite("cold-2", WriteCombinedStatus, d.now.Add(-10*time.Millisecond), d.now, WriteSucceeded)
	// only k0 is written, slowly, and asked for (updated) before each write
	d.run(3*time.Second, 5*time.Millisecond, 100*time.Millisecond, WriteSucceeded, func() { d.p.Delay("k0", d.now) })
	hot := d.p.Delay("k0", d.now.Add(time.Millisecond))
	if hot == 0 {
		t.Fatalf("the hot key is not delayed under load: %+v", d.p.State(d.now))
	}
	if cold := d.p.Delay("cold", d.now); cold != 0 {
		t.Errorf("a key last written 3 s ago waits %s; want 0 (a hot key must not hold back a cold one)", cold)
	}
	if never := d.p.Delay("never-written", d.now); never != 0 {
		t.Errorf("a key never written waits %s, want 0", never)
	}
	// Two keys with the same last write (and the same requests before it) are paced alike.
	at := d.now
	for _, k := range []string{"a", "b"} {
		d.p.Delay(k, at.Add(-200*time.Millisecond))
		d.p.Delay(k, at.Add(-100*time.Millisecond))
	}
	d.p.ObserveWrite("a", WriteCombinedStatus, at.Add(-time.Millisecond), at, WriteSucceeded)
	d.p.ObserveWrite("b", WriteCombinedStatus, at.Add(-time.Millisecond), at, WriteSucceeded)
	if a, b := d.p.Delay("a", at), d.p.Delay("b", at); a != b || a == 0 {
		t.Errorf("keys written at the same time: Delay %s and %s, want equal and > 0", a, b)
	}
	d.p.Forget("a")
	if a := d.p.Delay("a", at.Add(time.Millisecond)); a != 0 {
		t.Errorf("forgotten key waits %s, want 0", a)
	}
}

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

func TestOutcomeOf(t *testing.T) {
	gr := schema.GroupResource{Group: "control.kubestellar.io", Resource: "combinedstatuses"}
	for _, tc := range []struct {
		err  error
		want WriteOutcome
	}{
		{nil, WriteSucceeded},
		{apierrors.NewTooManyRequests("slow down", 1), WriteOverloaded},
		{apierrors.NewServiceUnavailable("unavailable"), WriteOverloaded},
		{apierrors.NewServerTimeout(gr, "apply", 1), WriteOverloaded},
		{apierrors.NewTimeoutError("timeout", 1), WriteOverloaded},
		{fmt.Errorf("apply: %w", context.DeadlineExceeded), WriteOverloaded},
		{apierrors.NewInternalError(errors.New("field not declared in schema")), WriteFailed},
		{apierrors.NewConflict(gr, "x", errors.New("conflict")), WriteFailed},
		{apierrors.NewGenericServerResponse(http.StatusBadGateway, "apply", gr, "x", "", 0, false), WriteFailed},
		{errors.New("connection refused"), WriteFailed},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
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

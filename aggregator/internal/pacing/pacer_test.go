package pacing

import (
	"fmt"
	"testing"
	"time"
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

package pacing

import (
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	testingclock "k8s.io/utils/clock/testing"
)

func newTestPacedQueue(t *testing.T, delay time.Duration) (*CoalescingQueue[string], *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(pacerT0)
	q := NewPacedCoalescingQueue("test_paced_"+t.Name(), delay, NewPacer[string](PacerOptions{}), clk)
	t.Cleanup(q.ShutDown)
	return q, clk
}

// eventuallyLen waits (in real time: the delaying queue moves keys in its own goroutine) until
// q holds n ready keys.
func eventuallyLen(t *testing.T, q *CoalescingQueue[string], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d ready keys, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// observe reports a write of key lasting l on clk, with err, to q's Pacer (as the writer package's observe does).
func observe(q *CoalescingQueue[string], clk *testingclock.FakeClock, key string, l time.Duration, err error) {
	start := clk.Now()
	clk.Step(l)
	q.pacer.ObserveWrite(key, WriteCombinedStatus, start, clk.Now(), OutcomeOf(err))
}

// TestPacedQueue pins the objects controller's queue with its Pacer (aggregator.Options.MaxWriteDelay):
// when idle a key just written is ready at once; under pressure a second Add of a just-written
// key waits the Pacer's delay (Adds meanwhile join it) while a key not written is ready at once;
// and CoalesceDelay stays a fixed minimum.
func TestPacedQueue(t *testing.T) {
	q, clk := newTestPacedQueue(t, 0)
	// Idle: a key is ready at once, also right after its write.
	q.Add("a")
	if q.Len() != 1 {
		t.Fatalf("idle: Len = %d after Add, want 1", q.Len())
	}
	k, _ := q.Get()
	observe(q, clk, k, 10*time.Millisecond, nil)
	q.Done(k)
	q.Add("a")
	if q.Len() != 1 {
		t.Fatalf("idle, just written: Len = %d after Add, want 1", q.Len())
	}
	k, _ = q.Get()
	q.Done(k)

	// Writes refused with 429 for 2 s make D grow to the cap.
	for range 200 {
		observe(q, clk, "a", 10*time.Millisecond, apierrors.NewTooManyRequests("busy", 1))
	}
	d := q.pacer.Delay("a", clk.Now())
	if d <= 0 || d > DefaultPacerMaxDelay {
		t.Fatalf("after 2 s of 429s: Delay = %s, want in (0, %s]", d, DefaultPacerMaxDelay)
	}
	// "a" now waits out its delay (adds meanwhile join it); a key never written is ready at once.
	q.Add("a")
	q.Add("a")
	q.Add("b")
	if q.Len() != 1 {
		t.Fatalf("under load: Len = %d, want 1 (only b)", q.Len())
	}
	if k, _ := q.Get(); k != "b" {
		t.Fatalf("Get = %q, want b", k)
	}
	q.Done("b")
	clk.Step(d - time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if q.Len() != 0 {
		t.Fatalf("a is ready %s before its delay ends", time.Millisecond)
	}
	clk.Step(time.Millisecond)
	eventuallyLen(t, q, 1)
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
	q.Done("a")
	if q.Len() != 0 {
		t.Fatalf("after the paced item: Len = %d, want 0 (two Adds were one item)", q.Len())
	}
}

// TestPacedQueueOneEvaluationPerWait: under load, a key updated every 100 ms after its write is
// ready once, D after that write, and not again until a later update: an update shortly before
// the end of the wait joins it. (Before, each update's wait was judged by MinFold on what was
// left of it, so an update shortly before the end found the rest not worth waiting and made the
// key ready at once, and the wait's timer made it ready a second time.)
func TestPacedQueueOneEvaluationPerWait(t *testing.T) {
	q, clk := newTestPacedQueue(t, 0)
	for range 200 { // 2 s of 429s: D at the cap
		observe(q, clk, "x", 10*time.Millisecond, apierrors.NewTooManyRequests("busy", 1))
	}
	q.Add("a") // never written: ready at once
	k, _ := q.Get()
	observe(q, clk, k, 10*time.Millisecond, nil)
	written := clk.Now()
	q.Done(k)
	d := q.pacer.State(written).Delay
	if d != DefaultPacerMaxDelay {
		t.Fatalf("D = %s, want the cap", d)
	}
	for clk.Now().Add(100 * time.Millisecond).Before(written.Add(d)) {
		clk.Step(100 * time.Millisecond)
		q.Add("a")
		time.Sleep(time.Millisecond)
		if q.Len() != 0 {
			t.Fatalf("%s after its write: a is ready, want it to wait until %s", clk.Now().Sub(written), d)
		}
	}
	// An update 10 ms before the end: what is left would fold ≈0.1 update, but the key waits anyway.
	clk.SetTime(written.Add(d - 10*time.Millisecond))
	q.Add("a")
	time.Sleep(time.Millisecond)
	if q.Len() != 0 {
		t.Fatalf("an update 10 ms before the end of the wait made a ready at once")
	}
	clk.SetTime(written.Add(d))
	eventuallyLen(t, q, 1)
	k, _ = q.Get()
	observe(q, clk, k, 10*time.Millisecond, nil)
	q.Done(k)
	clk.Step(500 * time.Millisecond) // past any timer left by the wait's updates
	time.Sleep(20 * time.Millisecond)
	if q.Len() != 0 {
		t.Errorf("a is ready again without an update: a second evaluation of the same updates")
	}
}

// With the Pacer idle (delay 0), CoalesceDelay still delays a key processed less than it ago.
func TestPacedQueueCoalesceMinimum(t *testing.T) {
	const delay = 300 * time.Millisecond
	q, clk := newTestPacedQueue(t, delay)
	q.Add("a")
	k, _ := q.Get()
	observe(q, clk, k, 10*time.Millisecond, nil)
	q.Done(k)
	if d := q.pacer.Delay("a", clk.Now()); d != 0 {
		t.Fatalf("idle Pacer: Delay = %s, want 0", d)
	}
	q.Add("a")
	if q.Len() != 0 {
		t.Fatalf("Add 10ms after processing: Len = %d, want 0 (CoalesceDelay %s is a minimum)", q.Len(), delay)
	}
	clk.Step(delay - 10*time.Millisecond)
	eventuallyLen(t, q, 1)
}

// The Pacer is used from event handlers and workers at once.
func TestPacerConcurrentUse(t *testing.T) {
	p := NewPacer[int](PacerOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	now := pacerT0
	tick := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				at := tick()
				k := (w*7 + i) % 50
				switch i % 4 {
				case 0:
					p.ObserveWrite(k, WriteCombinedStatus, at.Add(-30*time.Millisecond), at, WriteSucceeded)
				case 1:
					p.SetQueueDepth(i%40, at)
				case 2:
					p.ObserveWrite(k, WriteCombinedStatus, at.Add(-time.Millisecond), at, OutcomeOf(errors.New("x")))
				default:
					if d := p.Delay(k, at); d < 0 || d > DefaultPacerMaxDelay {
						t.Errorf("Delay = %s", d)
					}
				}
			}
		})
	}
	wg.Wait()
	_ = p.State(tick())
}

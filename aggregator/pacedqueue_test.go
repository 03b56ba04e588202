package aggregator

import (
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

func newTestPacedQueue(t *testing.T) (*PacedQueue[string], *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(pacerT0)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})
	t.Cleanup(q.ShutDown)
	return NewPacedQueue(q, NewPacer[string](PacerOptions{}), clk), clk
}

// eventuallyLen waits (in real time: the delaying queue moves keys in its own goroutine) until
// q holds n ready keys.
func eventuallyLen(t *testing.T, q *PacedQueue[string], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d ready keys, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPacedQueue(t *testing.T) {
	q, clk := newTestPacedQueue(t)
	// Idle: a key is ready at once, also right after its write.
	q.Add("a")
	if q.Len() != 1 {
		t.Fatalf("idle: Len = %d after Add, want 1", q.Len())
	}
	k, _ := q.Get()
	start := clk.Now()
	clk.Step(10 * time.Millisecond)
	q.ObserveWrite(k, start, nil)
	q.Done(k)
	q.Add("a")
	if q.Len() != 1 {
		t.Fatalf("idle, just written: Len = %d after Add, want 1", q.Len())
	}
	k, _ = q.Get()
	q.Done(k)

	// Writes refused with 429 for 2 s make D grow to the cap.
	for range 200 {
		start := clk.Now()
		clk.Step(10 * time.Millisecond)
		q.ObserveWrite("a", start, apierrors.NewTooManyRequests("busy", 1))
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
					p.ObserveWrite(k, at.Add(-30*time.Millisecond), at, WriteSucceeded)
				case 1:
					p.SetQueueDepth(i%40, at)
				case 2:
					p.ObserveWrite(k, at.Add(-time.Millisecond), at, OutcomeOf(errors.New("x")))
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

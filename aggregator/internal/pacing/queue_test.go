package pacing

import (
	"testing"
	"time"
)

// TestCoalescingQueue pins aggregator.Options.CoalesceDelay's semantics on the queue the controllers get: with
// delay 0 every Add is ready at once; with a delay, a key processed less than the delay ago is
// ready only when the delay has passed, however many times it is added meanwhile (one item), and
// a rate-limited requeue (a failed reconcile) follows the rate limiter, not the delay.
func TestCoalescingQueue(t *testing.T) {
	const delay = 300 * time.Millisecond
	take := func(t *testing.T, q *CoalescingQueue[string]) {
		t.Helper()
		k, quit := q.Get()
		if quit || k != "k" {
			t.Fatalf("Get = %q, %v; want k", k, quit)
		}
		q.Done(k)
	}
	t.Run("no delay", func(t *testing.T) {
		q := NewCoalescingQueue[string]("test_coalesce_none", 0)
		defer q.ShutDown()
		q.Add("k")
		take(t, q)
		q.Add("k")
		q.Add("k")
		if n := q.Len(); n != 1 {
			t.Fatalf("after two Adds of a processed key: Len = %d, want 1 (at once, once)", n)
		}
	})
	t.Run("delay", func(t *testing.T) {
		q := NewCoalescingQueue[string]("test_coalesce_delay", delay)
		defer q.ShutDown()
		q.Add("k")
		if n := q.Len(); n != 1 {
			t.Fatalf("first Add: Len = %d, want 1 (a key not processed recently is queued at once)", n)
		}
		take(t, q)
		start := time.Now()
		for range 5 {
			q.Add("k")
		}
		if n := q.Len(); n != 0 {
			t.Fatalf("Adds right after processing: Len = %d, want 0 (waiting for the delay)", n)
		}
		take(t, q)
		if waited := time.Since(start); waited < delay-50*time.Millisecond {
			t.Errorf("key ready after %s, want about %s", waited, delay)
		}
		if n := q.Len(); n != 0 {
			t.Errorf("after the coalesced item: Len = %d, want 0 (five Adds were one item)", n)
		}
	})
	t.Run("rate-limited requeue", func(t *testing.T) {
		// With an hour's delay, a requeue that followed the delay would never come back within
		// the test; the rate limiter's first step is milliseconds.
		q := NewCoalescingQueue[string]("test_coalesce_requeue", time.Hour)
		defer q.ShutDown()
		q.Add("k")
		k, _ := q.Get()
		q.AddRateLimited(k)
		q.Done(k)
		got := make(chan string, 1)
		go func() {
			k, _ := q.Get()
			got <- k
		}()
		select {
		case k := <-got:
			if k != "k" {
				t.Errorf("requeued Get = %q, want k", k)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("requeued key not ready: it waited for the coalescing delay, not the rate limiter")
		}
	})
}

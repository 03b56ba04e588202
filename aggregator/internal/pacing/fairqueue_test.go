package pacing

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

// add queues keys from flow; get takes n keys (each Done at once).
func add(q *CoalescingQueue[string], flow string, keys ...string) {
	for _, k := range keys {
		q.AddFrom(k, flow)
	}
}

func get(q *CoalescingQueue[string], n int) []string {
	var out []string
	for range n {
		k, _ := q.Get()
		q.Done(k)
		out = append(out, k)
	}
	return out
}

func noisyKeys(n int) []string {
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("n%d", i))
	}
	return keys
}

// TestFairQueueTakesFlowsInTurn pins fair queuing across flows: a flow with many waiting keys
// gets one turn per round, so a key of another flow waits behind one of its keys, not all; a
// waiting key queued again from another flow is taken at that flow's turn; without fair queuing
// the queue is one FIFO.
func TestFairQueueTakesFlowsInTurn(t *testing.T) {
	cases := []struct {
		name string
		fair bool
		run  func(q *CoalescingQueue[string]) []string
		want []string
	}{
		{"a quiet flow's key waits behind one noisy key", true, func(q *CoalescingQueue[string]) []string {
			add(q, "noisy", noisyKeys(10)...)
			add(q, "quiet", "q0", "q1")
			return get(q, 5)
		}, []string{"n0", "q0", "n1", "q1", "n2"}},
		{"unfair: one FIFO", false, func(q *CoalescingQueue[string]) []string {
			add(q, "noisy", noisyKeys(10)...)
			add(q, "quiet", "q0", "q1")
			return get(q, 12)
		}, append(noisyKeys(10), "q0", "q1")},
		{"a waiting key touched from another flow joins its turn", true, func(q *CoalescingQueue[string]) []string {
			add(q, "noisy", noisyKeys(10)...)
			add(q, "quiet", "n7") // the same object, updated by another WEC
			return get(q, 4)
		}, []string{"n0", "n7", "n1", "n2"}},
		{"each key once, in arrival order within a flow; keys without a flow share one", true, func(q *CoalescingQueue[string]) []string {
			add(q, "noisy", noisyKeys(3)...)
			q.Add("b0")
			add(q, "noisy", "n1")
			q.Add("b1")
			return get(q, 5)
		}, []string{"n0", "b0", "n1", "b1", "n2"}},
		{"a key re-added while processed comes back in its new flow", true, func(q *CoalescingQueue[string]) []string {
			add(q, "noisy", "n0", "n1")
			k, _ := q.Get() // n0, being processed
			add(q, "quiet", k)
			q.Done(k)
			add(q, "noisy", "n2")
			return append([]string{k}, get(q, 3)...)
		}, []string{"n0", "n0", "n1", "n2"}}, // noisy had its turn (n0): quiet's comes next
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q *CoalescingQueue[string]
			if tc.fair {
				q = NewFairPacedCoalescingQueue[string]("", 0, nil, clock.RealClock{})
			} else {
				q = NewPacedCoalescingQueue[string]("", 0, nil, clock.RealClock{})
			}
			defer q.ShutDown()
			if got := tc.run(q); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFairQueueKeepsAWorkerForOtherFlows runs the queue with workers on synctest's clock: a noisy
// flow keeps 20 keys waiting (each takes its worker 1 s and is queued again at once, as a WEC that
// reports every object every second), and a quiet flow's key arrives at 0.5 s. With fair queuing it
// is taken when the next worker frees (at 1 s); in one FIFO it waits behind every noisy key.
func TestFairQueueKeepsAWorkerForOtherFlows(t *testing.T) {
	for _, tc := range []struct {
		fair          bool
		atMost, least time.Duration // bounds of the quiet key's wait
	}{
		{true, time.Second, 0},
		{false, time.Hour, 5 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			newQ := NewPacedCoalescingQueue[string]
			if tc.fair {
				newQ = NewFairPacedCoalescingQueue[string]
			}
			q := newQ("", 0, nil, clock.RealClock{})
			add(q, "noisy", noisyKeys(20)...)
			start := time.Now()
			taken := make(chan time.Duration, 1)
			var workers sync.WaitGroup
			for range 2 {
				workers.Go(func() {
					for {
						k, quit := q.Get()
						if quit {
							return
						}
						if k == "q" {
							taken <- time.Since(start)
						} else {
							time.Sleep(time.Second)
							q.AddFrom(k, "noisy") // reported again
						}
						q.Done(k)
					}
				})
			}
			time.Sleep(500 * time.Millisecond)
			q.AddFrom("q", "quiet")
			wait := <-taken - 500*time.Millisecond
			q.ShutDown()
			workers.Wait()
			t.Logf("fair %v: the quiet key waited %s", tc.fair, wait)
			if wait > tc.atMost || wait < tc.least {
				t.Errorf("fair %v: the quiet key waited %s, want between %s and %s", tc.fair, wait, tc.least, tc.atMost)
			}
		})
	}
}

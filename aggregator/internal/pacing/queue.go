package pacing

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// CoalescingQueue is the work queue of one of the reconciler's controllers (the controller's
// NewQueue option supplies it): a rate-limited work queue that coalesces bursts per key. A key
// that has not been processed within the last `delay` is queued at once (an isolated event costs
// no added latency); a key processed less than `delay` ago is queued for when `delay` has passed,
// and events arriving meanwhile join that one item (the workqueue deduplicates waiting keys). So
// each key is evaluated at most about once per `delay`, however many events arrive. With delay 0
// (the default) every key is queued at once; the workqueue still holds a waiting key once, and a
// key re-added while it is processed is processed once more afterwards, so the events that arrive
// during an evaluation coalesce into the next one: batching grows with load, not with a timer.
//
// With a Pacer (the objects controller's, aggregator.Options.MaxWriteDelay), a key also waits out the
// Pacer's delay since its last write (Pacer.Delay): 0 when the apiserver has room, growing to
// MaxWriteDelay under write pressure (docs/controller.md, "Pacing writes"). The wait is the
// longer of the two, so `delay` acts as a fixed minimum and the Pacer as the adaptive part; the
// number of ready keys is reported to the Pacer at every Add and Get. The writers report each
// write to the same Pacer (Pacer.ObserveWrite). A key that waits joins later Adds to that wait
// (Pacer.DelayFor): an update shortly before the wait ends is not evaluated at once — the
// wait's timer would make it ready a second time.
//
// The controller's rate-limited requeues (AddRateLimited) and AddAfter bypass both: they follow
// the rate limiter's backoff or their own time. controller-runtime's metrics provider exports the
// queue's depth, adds and latencies by name.
type CoalescingQueue[K comparable] struct {
	workqueue.TypedRateLimitingInterface[K]
	Limiter workqueue.TypedRateLimiter[K]
	delay   time.Duration
	pacer   *Pacer[K] // nil: not paced
	clock   clock.PassiveClock
	fair    *FairQueue[K] // nil: one FIFO

	mu      sync.Mutex
	lastRun map[K]time.Time
	sweeps  int
	// due holds, per key that Add made wait (paced queues only), when its wait ends: until then
	// the key is waiting, and later Adds join that wait (Pacer.DelayFor).
	due map[K]time.Time
}

var _ workqueue.TypedRateLimitingInterface[string] = &CoalescingQueue[string]{}

// NewCoalescingQueue returns a queue with client-go's default controller rate limiter (per-key
// exponential backoff from 5 ms to 1000 s, and 10 requeues per second overall, bursts of 100),
// not paced.
func NewCoalescingQueue[K comparable](name string, delay time.Duration) *CoalescingQueue[K] {
	return NewPacedCoalescingQueue[K](name, delay, nil, clock.RealClock{})
}

// NewPacedCoalescingQueue is newCoalescingQueue paced by p (nil: not paced), on clk (the real
// clock outside tests).
func NewPacedCoalescingQueue[K comparable](name string, delay time.Duration, p *Pacer[K], clk clock.WithTicker) *CoalescingQueue[K] {
	return newQueue(name, delay, p, clk, nil)
}

// NewFairPacedCoalescingQueue is NewPacedCoalescingQueue whose waiting keys are taken by fair
// queuing across the flows that AddFrom names (FairQueue) instead of in one FIFO.
func NewFairPacedCoalescingQueue[K comparable](name string, delay time.Duration, p *Pacer[K], clk clock.WithTicker) *CoalescingQueue[K] {
	return newQueue(name, delay, p, clk, NewFairQueue[K]())
}

func newQueue[K comparable](name string, delay time.Duration, p *Pacer[K], clk clock.WithTicker, fair *FairQueue[K]) *CoalescingQueue[K] {
	rl := workqueue.DefaultTypedControllerRateLimiter[K]()
	cfg := workqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk}
	if fair != nil { // client-go's queue stack, as NewTypedRateLimitingQueueWithConfig builds it, over fair
		cfg.DelayingQueue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[K]{
			Name: name, Clock: clk,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[K]{Name: name, Clock: clk, Queue: fair}),
		})
	}
	return &CoalescingQueue[K]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, cfg),
		Limiter:                    rl,
		delay:                      delay,
		pacer:                      p,
		clock:                      clk,
		fair:                       fair,
		lastRun:                    map[K]time.Time{},
		due:                        map[K]time.Time{},
	}
}

// AddFrom is Add of a key queued by an event of flow (for the objects controller, a WEC): with
// fair queuing the key waits in that flow's turn (FairQueue); without, it is Add.
func (c *CoalescingQueue[K]) AddFrom(key K, flow string) {
	if c.fair != nil {
		c.fair.Note(key, flow)
	}
	c.Add(key)
}

// Add queues key now, or when `delay` has passed since it was last processed and the Pacer's
// delay since its last write has passed, whichever is later.
func (c *CoalescingQueue[K]) Add(key K) {
	if c.delay == 0 && c.pacer == nil {
		c.TypedRateLimitingInterface.Add(key)
		return
	}
	now := c.clock.Now()
	var wait time.Duration
	if c.delay > 0 {
		c.mu.Lock()
		last, ok := c.lastRun[key]
		c.mu.Unlock()
		if ok {
			wait = c.delay - now.Sub(last)
		}
	}
	if c.pacer != nil {
		c.mu.Lock()
		due, waiting := c.due[key]
		waiting = waiting && due.After(now)
		c.mu.Unlock()
		wait = max(wait, c.pacer.DelayFor(key, now, waiting))
	}
	if wait > 0 {
		if c.pacer != nil {
			c.mu.Lock()
			if due, waiting := c.due[key]; !waiting || !due.After(now) || now.Add(wait).Before(due) {
				c.due[key] = now.Add(wait) // the delaying queue keeps the earlier of two waits too
			}
			c.mu.Unlock()
		}
		c.AddAfter(key, wait)
	} else {
		c.TypedRateLimitingInterface.Add(key)
	}
	if c.pacer != nil {
		c.pacer.SetQueueDepth(c.Len(), now)
	}
}

// Get hands the next key to a worker and records that it is being processed now.
func (c *CoalescingQueue[K]) Get() (K, bool) {
	key, quit := c.TypedRateLimitingInterface.Get()
	if !quit {
		c.started(key)
	}
	if c.pacer != nil {
		now := c.clock.Now()
		if !quit {
			c.mu.Lock()
			if due, ok := c.due[key]; ok && !due.After(now) {
				delete(c.due, key) // its wait ended: this is the evaluation it waited for
			}
			c.mu.Unlock()
		}
		c.pacer.SetQueueDepth(c.Len(), now)
	}
	return key, quit
}

// started records that key is being processed now.
func (c *CoalescingQueue[K]) started(key K) {
	if c.delay == 0 {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRun[key] = now
	// A map swept every 4096 calls, not k8s.io/apimachinery's cache.Expiring: its Set keeps a heap
	// entry per call (≈770 ns and 3 allocations against ≈120 ns and none here, on every evaluation),
	// and an entry kept past its time changes nothing (the wait it could cause is over).
	if c.sweeps++; c.sweeps >= 4096 {
		c.sweeps = 0
		for k, t := range c.lastRun {
			if now.Sub(t) > c.delay {
				delete(c.lastRun, k)
			}
		}
	}
}

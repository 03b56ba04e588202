package aggregator

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
)

// coalescingQueue is a rate-limited work queue whose Add waits CoalesceDelay: a burst of events
// for one key within the delay becomes one item (the workqueue deduplicates waiting keys).
// controller-runtime's metrics provider exports its depth, adds and latencies under its name.
type coalescingQueue[K comparable] struct {
	q     workqueue.TypedRateLimitingInterface[K]
	delay time.Duration
}

func newCoalescingQueue[K comparable](name string, delay time.Duration) *coalescingQueue[K] {
	return &coalescingQueue[K]{
		q: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[K](),
			workqueue.TypedRateLimitingQueueConfig[K]{Name: name}),
		delay: delay,
	}
}

// Add schedules key after the coalescing delay.
func (c *coalescingQueue[K]) Add(key K) { c.q.AddAfter(key, c.delay) }

func (c *coalescingQueue[K]) shutDown() { c.q.ShutDown() }

// processNext runs f on the next key; errors are retried with backoff, success forgets the key.
// It returns false when the queue is shut down.
func processNext[K comparable](ctx context.Context, c *coalescingQueue[K], f func(context.Context, K) error, m *metrics, log logr.Logger) bool {
	key, quit := c.q.Get()
	if quit {
		return false
	}
	defer c.q.Done(key)
	if err := f(ctx, key); err != nil {
		m.errors.WithLabelValues("reconcile").Inc()
		log.V(1).Info("retrying", "key", key, "error", err.Error())
		c.q.AddRateLimited(key)
		return true
	}
	c.q.Forget(key)
	return true
}

// eventTimes remembers, per object, when the oldest WorkStatus event not yet acted on arrived:
// the start of the event→write latency.
type eventTimes struct {
	mu sync.Mutex
	m  map[ObjectKey]time.Time
}

func (e *eventTimes) init() { e.m = map[ObjectKey]time.Time{} }

func (e *eventTimes) mark(k ObjectKey, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.m[k]; !ok {
		e.m[k] = t
	}
}

// take returns and forgets the time of k's oldest pending event.
func (e *eventTimes) take(k ObjectKey) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.m[k]
	delete(e.m, k)
	return t, ok
}

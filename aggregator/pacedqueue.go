package aggregator

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// PacedQueue is a work queue whose Add waits for a Pacer: a key is queued at once when the
// Pacer's delay for it is 0, else when the delay has passed (events meanwhile join that one
// item, as the delaying queue keeps a waiting key once, at its earliest time). Every other
// method is the wrapped queue's, so retries (AddRateLimited) and RequeueAfter (AddAfter) are
// not paced. The number of ready keys is reported to the Pacer at every Add and Get.
//
// The reconciler that takes keys from it reports each write to the same Pacer
// (Pacer.ObserveWrite with OutcomeOf the write's error).
type PacedQueue[K comparable] struct {
	workqueue.TypedRateLimitingInterface[K]
	pacer *Pacer[K]
	clock clock.PassiveClock
}

// NewPacedQueue wraps q; c is the clock of q (clock.RealClock{} outside tests).
func NewPacedQueue[K comparable](q workqueue.TypedRateLimitingInterface[K], p *Pacer[K], c clock.PassiveClock) *PacedQueue[K] {
	return &PacedQueue[K]{TypedRateLimitingInterface: q, pacer: p, clock: c}
}

// NewPacedQueueFunc returns a constructor of paced rate-limiting queues with the signature of
// controller-runtime's controller.TypedOptions.NewQueue.
func NewPacedQueueFunc[K comparable](p *Pacer[K]) func(string, workqueue.TypedRateLimiter[K]) workqueue.TypedRateLimitingInterface[K] {
	return func(name string, rl workqueue.TypedRateLimiter[K]) workqueue.TypedRateLimitingInterface[K] {
		q := workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[K]{Name: name})
		return NewPacedQueue(q, p, clock.RealClock{})
	}
}

// Add queues key after the Pacer's delay for it.
func (q *PacedQueue[K]) Add(key K) {
	now := q.clock.Now()
	if d := q.pacer.Delay(key, now); d > 0 {
		q.TypedRateLimitingInterface.AddAfter(key, d)
	} else {
		q.TypedRateLimitingInterface.Add(key)
	}
	q.pacer.SetQueueDepth(q.Len(), now)
}

// Get returns the next ready key (blocking), as the wrapped queue does.
func (q *PacedQueue[K]) Get() (K, bool) {
	key, shutdown := q.TypedRateLimitingInterface.Get()
	q.pacer.SetQueueDepth(q.Len(), q.clock.Now())
	return key, shutdown
}

// ObserveWrite reports a write of key that started at start and ended now with err to the Pacer.
func (q *PacedQueue[K]) ObserveWrite(key K, start time.Time, err error) {
	q.pacer.ObserveWrite(key, start, q.clock.Now(), OutcomeOf(err))
}

var _ workqueue.TypedRateLimitingInterface[ObjectKey] = (*PacedQueue[ObjectKey])(nil)

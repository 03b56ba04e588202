package aggregator

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// coalescingQueue is the work queue of one of the reconciler's controllers (the controller's
// NewQueue option supplies it): a rate-limited work queue that coalesces bursts per key. A key
// that has not been processed within the last `delay` is queued at once (an isolated event costs
// no added latency); a key processed less than `delay` ago is queued for when `delay` has passed,
// and events arriving meanwhile join that one item (the workqueue deduplicates waiting keys). So
// each key is evaluated at most about once per `delay`, however many events arrive. With delay 0
// (the default) every key is queued at once; the workqueue still holds a waiting key once, and a
// key re-added while it is processed is processed once more afterwards, so the events that arrive
// during an evaluation coalesce into the next one: batching grows with load, not with a timer.
//
// With a Pacer (the objects controller's, Options.MaxWriteDelay), a key also waits out the
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
type coalescingQueue[K comparable] struct {
	workqueue.TypedRateLimitingInterface[K]
	limiter workqueue.TypedRateLimiter[K]
	delay   time.Duration
	pacer   *Pacer[K] // nil: not paced
	clock   clock.PassiveClock

	mu      sync.Mutex
	lastRun map[K]time.Time
	sweeps  int
	// due holds, per key that Add made wait (paced queues only), when its wait ends: until then
	// the key is waiting, and later Adds join that wait (Pacer.DelayFor).
	due map[K]time.Time
}

var _ workqueue.TypedRateLimitingInterface[string] = &coalescingQueue[string]{}

// newCoalescingQueue returns a queue with client-go's default controller rate limiter (per-key
// exponential backoff from 5 ms to 1000 s, and 10 requeues per second overall, bursts of 100),
// not paced.
func newCoalescingQueue[K comparable](name string, delay time.Duration) *coalescingQueue[K] {
	return newPacedCoalescingQueue[K](name, delay, nil, clock.RealClock{})
}

// newPacedCoalescingQueue is newCoalescingQueue paced by p (nil: not paced), on clk (the real
// clock outside tests).
func newPacedCoalescingQueue[K comparable](name string, delay time.Duration, p *Pacer[K], clk clock.WithTicker) *coalescingQueue[K] {
	rl := workqueue.DefaultTypedControllerRateLimiter[K]()
	return &coalescingQueue[K]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl,
			workqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk}),
		limiter: rl,
		delay:   delay,
		pacer:   p,
		clock:   clk,
		lastRun: map[K]time.Time{},
		due:     map[K]time.Time{},
	}
}

// Add queues key now, or when `delay` has passed since it was last processed and the Pacer's
// delay since its last write has passed, whichever is later.
func (c *coalescingQueue[K]) Add(key K) {
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
func (c *coalescingQueue[K]) Get() (K, bool) {
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
func (c *coalescingQueue[K]) started(key K) {
	if c.delay == 0 {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRun[key] = now
	if c.sweeps++; c.sweeps >= 4096 {
		c.sweeps = 0
		for k, t := range c.lastRun {
			if now.Sub(t) > c.delay {
				delete(c.lastRun, k)
			}
		}
	}
}

// eventTimes remembers, per object, when the oldest WorkStatus event not yet acted on arrived:
// the start of the event→write latency.
type eventTimes struct {
	mu sync.Mutex
	m  map[rules.ObjectKey]time.Time
}

func newEventTimes() *eventTimes { return &eventTimes{m: map[rules.ObjectKey]time.Time{}} }

func (e *eventTimes) mark(k rules.ObjectKey, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.m[k]; !ok {
		e.m[k] = t
	}
}

// take returns and forgets the time of k's oldest pending event.
func (e *eventTimes) take(k rules.ObjectKey) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.m[k]
	delete(e.m, k)
	return t, ok
}

// ownWrites remembers, per object statusfold writes, the resourceVersions its last writes gave
// the object. A watch event carrying one of them is the echo of statusfold's own write: it changes
// no input, so it needs no evaluation. Any other writer's change has another resourceVersion and
// is evaluated as usual.
//
// The watch may deliver a write's echo before the write's answer gives its resourceVersion, so a
// writer marks its write with begin and end: an event that arrives in between, and is not the
// echo of an earlier write, is held and decided when the write ends — dropped if it carries the
// write's resourceVersion, else handed on as any other change (held events are never lost:
// a failed write, forget and forgetResource hand them all on).
type ownWrites struct {
	mu sync.Mutex
	m  map[string]*ownWrite
}

// ownWrite is what ownWrites knows of one object.
type ownWrite struct {
	rvs      [ownWriteRVs]string // the resourceVersions of the last writes, newest first
	inFlight bool
	held     []heldEvent // the events that arrived during the write in flight
}

// heldEvent is an event held during a write: its resourceVersion, and what to do if it is not
// the write's echo.
type heldEvent struct {
	rv      string
	notEcho func()
}

// ownWriteRVs is how many of its writes' resourceVersions are remembered per object: an
// evaluation writes an object at most twice (a returned status's labels, then its status), and the
// first write's echo may arrive after the second write's answer.
const ownWriteRVs = 2

func (o *ownWrite) isOwn(rv string) bool {
	return rv != "" && slices.Contains(o.rvs[:], rv)
}

func (w *ownWrites) entry(key string) *ownWrite {
	if w.m == nil {
		w.m = map[string]*ownWrite{}
	}
	o := w.m[key]
	if o == nil {
		o = &ownWrite{}
		w.m[key] = o
	}
	return o
}

// begin marks a write of key as started. Each begin must be followed by end (deferred: a write
// that panics must not leave its events held).
func (w *ownWrites) begin(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entry(key).inFlight = true
}

// end marks the write of key as done, with the resourceVersion it gave the object ("" when it
// failed, or its answer carried none), and hands on the events held meanwhile that were not its
// echo.
func (w *ownWrites) end(key, rv string) {
	w.mu.Lock()
	o := w.entry(key)
	if rv != "" {
		copy(o.rvs[1:], o.rvs[:])
		o.rvs[0] = rv
	}
	var notEcho []func()
	for _, e := range o.held {
		if !o.isOwn(e.rv) {
			notEcho = append(notEcho, e.notEcho)
		}
	}
	o.inFlight, o.held = false, nil
	w.mu.Unlock()
	for _, f := range notEcho {
		f()
	}
}

// seen decides an event of key with resourceVersion rv: the echo of one of statusfold's last
// writes is dropped (seen reports true); during a write the event is held until the write ends
// (end); anything else calls notEcho now.
func (w *ownWrites) seen(key, rv string, notEcho func()) bool {
	w.mu.Lock()
	o := w.m[key]
	switch {
	case o != nil && o.isOwn(rv):
		w.mu.Unlock()
		return true
	case o != nil && o.inFlight:
		o.held = append(o.held, heldEvent{rv: rv, notEcho: notEcho})
		w.mu.Unlock()
	default:
		w.mu.Unlock()
		notEcho()
	}
	return false
}

// forget forgets key (its object is gone) and hands on the events held for it.
func (w *ownWrites) forget(key string) {
	w.mu.Lock()
	var held []heldEvent
	if o := w.m[key]; o != nil {
		held = o.held
		delete(w.m, key)
	}
	w.mu.Unlock()
	handOn(held)
}

// forgetResource forgets every object of a resource (its informer stopped: no delete event will
// come for them).
func (w *ownWrites) forgetResource(gr schema.GroupResource) {
	prefix := rules.ObjectKey{Group: gr.Group, Resource: gr.Resource}.String()
	prefix = strings.TrimSuffix(prefix, "/") // group/resource/
	w.mu.Lock()
	var held []heldEvent
	for k, o := range w.m {
		if strings.HasPrefix(k, prefix) {
			held = append(held, o.held...)
			delete(w.m, k)
		}
	}
	w.mu.Unlock()
	handOn(held)
}

// handOn treats events held for an object that is forgotten as changes by someone else.
func handOn(held []heldEvent) {
	for _, e := range held {
		e.notEcho()
	}
}

// len counts the objects whose writes are remembered.
func (w *ownWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// bindingWriteKey is the ownWrites key of a Binding.
func bindingWriteKey(name string) string { return "bindings/" + name }

// combinedStatusWriteKey is the ownWrites key of a CombinedStatus.
func combinedStatusWriteKey(namespace, name string) string {
	return "combinedstatuses/" + namespace + "/" + name
}

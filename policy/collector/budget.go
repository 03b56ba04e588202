package collector

import (
	"context"
	"fmt"
	"time"
)

// DefaultTimeBudget is the wall time the comprehensions of one collector may take over one
// evaluation of one object (every row it evaluates between two reads of a Table's results).
//
// The runtime cost limit is the deterministic bound on each expression, but cel-go's runtime cost
// tracker is itself slow on nested comprehensions (its value stack is searched linearly), so an
// expression that passes the static estimate can run for seconds per row before the limit stops it
// — for every WEC. The apiserver bounds CEL the same way, with its request's deadline and an
// interrupt check every 100 comprehension iterations.
const DefaultTimeBudget = 2 * time.Second

// interruptCheckFrequency is how many comprehension iterations run between two checks of the
// time budget (the apiserver's celconfig.CheckFrequency).
const interruptCheckFrequency = 100

// WithTimeBudget sets the time budget of the compiled collectors (default DefaultTimeBudget); d
// must be positive.
func WithTimeBudget(d time.Duration) CompilerOption {
	return func(c *Compiler) {
		if d > 0 {
			c.timeBudget = d
		}
	}
}

// deadline is a deadline started lazily: at the first context() after the previous end().
type deadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// context returns the current deadline's context, starting one of limit under parent with
// cause when there is none.
func (d *deadline) context(parent context.Context, limit time.Duration, cause func() error) context.Context {
	if d.ctx == nil {
		d.ctx, d.cancel = context.WithTimeoutCause(parent, limit, cause())
	}
	return d.ctx
}

// end closes the current deadline: the next context() starts a new one.
func (d *deadline) end() {
	if d.cancel != nil {
		d.cancel()
	}
	d.ctx, d.cancel = nil, nil
}

// timeBudget is one collector's time budget in one Table. Its deadline starts with the first
// comprehension evaluated after the previous results were read, and ends when they are read again.
// When it has passed, every comprehension fails at its next check, with a row error that says
// so; other rows and collectors are not affected.
type timeBudget struct {
	limit time.Duration
	deadline
	// object is the object's budget shared with the other collectors and Tables of the object
	// (nil: none): this budget's deadline is also bounded by it.
	object *ObjectBudget
}

func (b *timeBudget) context() context.Context {
	if b.ctx != nil {
		return b.ctx
	}
	if b.limit <= 0 {
		b.limit = DefaultTimeBudget
	}
	parent := context.Background()
	if b.object != nil {
		parent = b.object.context()
	}
	return b.deadline.context(parent, b.limit, func() error {
		return fmt.Errorf("the collector's comprehensions took more than their time budget of %s for this object", b.limit)
	})
}

// ObjectBudget is one wall-time budget for the comprehensions of all the collectors of one
// workload object, over all its Tables (pairs) and WECs, in one evaluation of the object
// (Table.SetObjectBudget): on top of each collector's own budget, so that an object with many
// collectors or pairs holds a worker for a bounded time. Its deadline starts with the first
// comprehension evaluated under it and ends with End. When it has passed, every comprehension
// under it fails at its next check with a row error that says so.
//
// An ObjectBudget is used by one goroutine at a time, as the Tables it bounds.
type ObjectBudget struct {
	limit time.Duration
	deadline
}

// NewObjectBudget returns an object's budget of limit (≤ 0: no limit of its own).
func NewObjectBudget(limit time.Duration) *ObjectBudget { return &ObjectBudget{limit: limit} }

func (o *ObjectBudget) context() context.Context {
	if o.limit <= 0 {
		return context.Background()
	}
	if o.ctx != nil {
		return o.ctx
	}
	return o.deadline.context(context.Background(), o.limit, func() error {
		return fmt.Errorf("the comprehensions of the object's StatusCollectors took more than the object's time budget of %s (all its collectors and WECs) in this evaluation", o.limit)
	})
}

// End closes the object's evaluation: the next comprehension under it starts a new deadline.
func (o *ObjectBudget) End() { o.end() }

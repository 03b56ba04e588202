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

// timeBudget is one collector's time budget in one Table. Its deadline starts with the first
// comprehension evaluated after the previous results were read, and ends when they are read again.
// When it has passed, every comprehension fails at its next check, with a row error that says
// so; other rows and collectors are not affected.
type timeBudget struct {
	limit  time.Duration
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *timeBudget) context() context.Context {
	if b.ctx == nil {
		if b.limit <= 0 {
			b.limit = DefaultTimeBudget
		}
		b.ctx, b.cancel = context.WithTimeoutCause(context.Background(), b.limit, fmt.Errorf(
			"the collector's comprehensions took more than their time budget of %s for this object", b.limit))
	}
	return b.ctx
}

// end closes the current evaluation: the next comprehension starts a new deadline.
func (b *timeBudget) end() {
	if b.cancel != nil {
		b.cancel()
	}
	b.ctx, b.cancel = nil, nil
}

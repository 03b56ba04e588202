package aggregation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Bounds of evaluation (docs/security.md, "Rego sandbox").
const (
	defaultTimeout   = time.Second
	defaultMaxOutput = 1 << 20
	// compileEvalTimeout bounds the evaluation of a static `combine` when a module is compiled.
	compileEvalTimeout = time.Second
	// admissionTimeout bounds the whole check of a user policy — compiling it, its static
	// `combine`, all its examples — well under the webhook's timeout of 10 s.
	admissionTimeout = 2 * time.Second
	// defaultMaxConcurrent is how many Rego evaluations the process runs at once, by default.
	defaultMaxConcurrent = 4
)

// limits bound one evaluation.
type limits struct {
	timeout         time.Duration
	maxOutputBytes  int
	maxBuiltinBytes int64
	// slots limits the evaluations that run at once (nil: processSlots, shared by every engine
	// and every admission check of the process).
	slots chan struct{}
	// parent bounds every evaluation as well (nil: none): the admission check's context, so
	// that validating a policy never outlasts it.
	parent context.Context
}

func defaultLimits() limits {
	return limits{timeout: defaultTimeout, maxOutputBytes: defaultMaxOutput, maxBuiltinBytes: defaultMaxBuiltinBytes}
}

// processSlots is the process's semaphore of Rego evaluations: N workers cannot each hold a large
// evaluation at once.
var processSlots = make(chan struct{}, defaultMaxConcurrent)

// evaluation is the evaluation of one object (or of a module's static `combine`, or of one
// example): every Rego query it runs — `combine` with input, each WEC's `wec_rank`, `finalize`,
// `status` — shares one context, with one deadline, one budget of builtin bytes and one of the
// process's evaluation slots. The slot is taken, and the deadline starts, at the first query; a
// State that needs no Rego takes neither.
type evaluation struct {
	lim     limits
	ctx     context.Context
	cancel  context.CancelFunc
	release func()
}

func newEvaluation(lim limits) *evaluation { return &evaluation{lim: lim} }

func (ev *evaluation) parent() context.Context {
	if ev.lim.parent != nil {
		return ev.lim.parent
	}
	return context.Background()
}

// context returns the evaluation's context, starting the evaluation on the first call: waiting for
// a slot (as long as the parent context allows), then setting the deadline.
func (ev *evaluation) context() (context.Context, error) {
	if ev.ctx != nil {
		return ev.ctx, nil
	}
	parent, slots := ev.parent(), ev.lim.slots
	if slots == nil {
		slots = processSlots
	}
	select {
	case slots <- struct{}{}:
	case <-parent.Done():
		return nil, fmt.Errorf("evaluation not started: %w", context.Cause(parent))
	}
	ev.release = func() { <-slots }
	ctx, cancel := context.WithTimeout(parent, ev.lim.timeout)
	ev.ctx, ev.cancel = withBudget(ctx, ev.lim.maxBuiltinBytes), cancel
	return ev.ctx, nil
}

// end ends the evaluation and gives its slot back.
func (ev *evaluation) end() {
	if ev.cancel != nil {
		ev.cancel()
		ev.release()
		ev.ctx, ev.cancel, ev.release = nil, nil, nil
	}
}

// eval runs q as part of ev (nil: an evaluation of its own) and returns the first result,
// normalised (JSON numbers become int64 or float64).
func (m *module) eval(ev *evaluation, q *rego.PreparedEvalQuery, input ast.Value) (any, bool, error) {
	if ev == nil {
		ev = newEvaluation(m.lim)
		defer ev.end()
	}
	ctx, err := ev.context()
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", m.name, err)
	}
	var opts []rego.EvalOption
	if input != nil {
		opts = append(opts, rego.EvalParsedInput(input))
	}
	rs, err := q.Eval(ctx, opts...)
	if err != nil {
		if parent := ev.parent(); parent.Err() != nil {
			return nil, false, fmt.Errorf("%s: evaluation stopped: %w", m.name, context.Cause(parent))
		}
		if ctx.Err() != nil && (topdown.IsCancel(err) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, false, fmt.Errorf("%s: evaluation exceeded %s: %w", m.name, ev.lim.timeout, err)
		}
		return nil, false, fmt.Errorf("%s: %w", m.name, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, false, nil
	}
	return NormalizeNumbers(rs[0].Expressions[0].Value), true, nil
}

// boundedJSON converts a query's result to Go values, unless it is larger than max bytes as JSON:
// a value built from shared subterms (a1 := [a0, a0]; a2 := [a1, a1]; …) is small in memory and
// would expand to billions of nodes.
func boundedJSON(max int) func(*ast.Term, *rego.EvalContext) (any, error) {
	return func(t *ast.Term, _ *rego.EvalContext) (any, error) {
		if valueSize(t.Value, int64(max)) > int64(max) {
			return nil, fmt.Errorf("the result is larger than %d bytes as JSON", max)
		}
		return ast.JSON(t.Value)
	}
}

package aggregation

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Bounds on what the builtins of one evaluation may build (docs/security.md, "Rego sandbox").
const (
	// defaultMaxBuiltinBytes is what the builtins of one evaluation may build in all, in bytes
	// (WithMaxBuiltinBytes): strings, lists, decoded documents, walked paths.
	defaultMaxBuiltinBytes = 32 << 20
	// maxRangeSpan is the most numbers one numbers.range or numbers.range_step may return.
	maxRangeSpan = 100_000
	// maxNumberChars and maxNumberExponent bound the operands of arithmetic: repeated squaring
	// doubles the digits of a number, and one product of two million-digit numbers runs for
	// seconds without checking the deadline.
	maxNumberChars    = 100
	maxNumberExponent = 400
	// maxCompareBytes bounds the values compared by one comparison, as JSON (a value built from
	// shared subterms can stand for billions of nodes).
	maxCompareBytes = 16 << 20
	// termBytes is what one element of a list, set or path costs, roughly.
	termBytes = 48
)

type budgetKey struct{}

// budget is what the builtins of one evaluation may still build, in bytes. The wrapped builtins
// find it in the evaluation's context; without one (an OPA evaluation that is not the engine's),
// they run unwrapped.
type budget struct {
	left atomic.Int64
	max  int64
}

func withBudget(ctx context.Context, max int64) context.Context {
	b := &budget{max: max}
	b.left.Store(max)
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetOf(ctx context.Context) *budget {
	if ctx == nil {
		return nil
	}
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// charge takes n bytes from the budget, or says that there are not that many left.
func (b *budget) charge(n int64) error {
	if n <= 0 {
		return nil
	}
	if n > b.max || b.left.Add(-n) < 0 {
		return fmt.Errorf("the evaluation's builtins would build more than %d bytes (the engine's bound on one evaluation)", b.max)
	}
	return nil
}

// guard is how the engine bounds one builtin: pre checks the operands and says how many bytes the
// call may build, at most, before it runs; post says what one result costs (default: its shallow
// size). Both are charged to the evaluation's budget.
type guard struct {
	pre  func(ops []*ast.Term, left int64) (int64, error)
	post func(*ast.Term) int64
}

// guarded wraps the implementation of a builtin of arity args with its guard. It also refuses to
// start once the evaluation's deadline has passed, so no builtin runs after it.
func guarded(orig topdown.BuiltinFunc, args int, g guard) topdown.BuiltinFunc {
	post := g.post
	if post == nil {
		post = shallowSize
	}
	return func(bctx topdown.BuiltinContext, ops []*ast.Term, iter func(*ast.Term) error) error {
		b := budgetOf(bctx.Context)
		if b == nil {
			return orig(bctx, ops, iter)
		}
		if err := bctx.Context.Err(); err != nil {
			return err
		}
		if g.pre != nil && len(ops) >= args {
			n, err := g.pre(ops[:args], b.left.Load()) // without the output operand
			if err != nil {
				return err
			}
			if err := b.charge(n); err != nil {
				return err
			}
		}
		return orig(bctx, ops, func(t *ast.Term) error {
			if err := b.charge(post(t)); err != nil {
				return err
			}
			return iter(t)
		})
	}
}

// The engine's builtins replace OPA's own implementations of the allowed builtins, for the whole
// process: topdown always prefers its registered implementation of a name OPA declares, so a
// per-query override is not possible. They behave as OPA's do, except for the bounds, and only
// inside the engine's evaluations (which carry a budget). CanSkipBctx is cleared so that topdown
// passes them the evaluation's context.
func init() {
	for name := range allowed {
		orig := topdown.GetBuiltin(name)
		decl := ast.BuiltinMap[name]
		if orig == nil || decl == nil {
			continue // assign and eq are the evaluator's own
		}
		decl.CanSkipBctx = false
		topdown.RegisterBuiltinFunc(name, guarded(orig, decl.Decl.Arity(), guards[name]))
	}
}

// shallowSize is what a builtin's result costs, not counting the elements it shares with its
// operands.
func shallowSize(t *ast.Term) int64 {
	switch v := t.Value.(type) {
	case ast.String:
		return int64(len(v))
	case ast.Number:
		return int64(len(v))
	case *ast.Array:
		return int64(v.Len()) * termBytes
	case ast.Set:
		return int64(v.Len()) * termBytes
	case ast.Object:
		return int64(v.Len()) * 2 * termBytes
	}
	return 0
}

// walkPathSize is what one result of walk costs: its path.
func walkPathSize(t *ast.Term) int64 {
	if pair, ok := t.Value.(*ast.Array); ok && pair.Len() == 2 {
		if path, ok := pair.Elem(0).Value.(*ast.Array); ok {
			return int64(path.Len()+1) * termBytes
		}
	}
	return termBytes
}

// valueSize is about the size of v as JSON, counting shared subterms once per use; it stops
// counting above limit (so it takes time in proportion to min(limit, size)).
func valueSize(v ast.Value, limit int64) int64 {
	var n int64
	var visit func(v ast.Value) bool
	visit = func(v ast.Value) bool {
		switch x := v.(type) {
		case ast.String:
			n += int64(len(x)) + 2
		case ast.Number:
			n += int64(len(x))
		case *ast.Array:
			n += 2
			for i := 0; i < x.Len() && n <= limit; i++ {
				if !visit(x.Elem(i).Value) {
					return false
				}
				n++
			}
		case ast.Set:
			n += 2
			x.Until(func(t *ast.Term) bool { return !visit(t.Value) || n > limit })
		case ast.Object:
			n += 2
			x.Until(func(k, t *ast.Term) bool {
				n += 2
				return !visit(k.Value) || !visit(t.Value) || n > limit
			})
		default:
			n += 5
		}
		return n <= limit
	}
	visit(v)
	return n
}

// scalar says whether v is neither a list, a set nor an object.
func scalar(v ast.Value) bool {
	switch v.(type) {
	case *ast.Array, ast.Set, ast.Object:
		return false
	}
	return true
}

// capped returns n, or math.MaxInt64 when n is negative (an overflow).
func capped(n int64) int64 {
	if n < 0 {
		return math.MaxInt64
	}
	return n
}

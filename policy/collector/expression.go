package collector

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// expression is one compiled CEL expression of a collector.
//
// Most collector expressions are plain field paths (`inventory.name`, `returned.status.phase`,
// `inventory.labels['region']`). For those, path holds the variable and the keys, and eval reads
// the value directly when every key is present in a map; in every other case (a missing key, a
// null or a list on the way) it runs the CEL program, so results and error messages are CEL's own.
// A successful field read has a small fixed cost, far below the runtime cost limit.
type expression struct {
	prg  cel.Program
	path []string // variable, then keys; nil when the expression is not a plain field path
	// loops says whether the expression has a comprehension (all(), exists(), map(), filter(), …):
	// only those can run long enough to need the time budget, and only they check it.
	loops bool
}

// eval returns the expression's value: a CEL value (ref.Val), or, from a direct field read, the
// plain Go value that CEL would have converted. An expression with a comprehension runs under b.
func (e *expression) eval(a *activation, b *timeBudget) (any, error) {
	if e.path != nil {
		if v, ok := a.readPath(e.path); ok {
			return v, nil
		}
	}
	var (
		out ref.Val
		err error
	)
	if e.loops {
		out, _, err = e.prg.ContextEval(b.context(), a)
	} else {
		out, _, err = e.prg.Eval(a)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// hasComprehension says whether a checked expression contains a comprehension.
func hasComprehension(e ast.Expr) bool {
	found := false
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		found = found || e.Kind() == ast.ComprehensionKind
	}))
	return found
}

// attributePath returns [variable, key...] when a checked expression is a chain of field
// selections (not has()) and constant-string indexes on a variable, else nil.
func attributePath(e ast.Expr) []string {
	var keys []string
	for {
		switch e.Kind() {
		case ast.IdentKind:
			switch name := e.AsIdent(); name {
			case varInventory, varObj, varReturned, varPropagation:
				out := []string{name}
				for i := len(keys) - 1; i >= 0; i-- {
					out = append(out, keys[i])
				}
				return out
			}
			return nil
		case ast.SelectKind:
			sel := e.AsSelect()
			if sel.IsTestOnly() {
				return nil
			}
			keys = append(keys, sel.FieldName())
			e = sel.Operand()
		case ast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != operators.Index || len(call.Args()) != 2 || call.IsMemberFunction() {
				return nil
			}
			key := call.Args()[1]
			if key.Kind() != ast.LiteralKind {
				return nil
			}
			s, ok := key.AsLiteral().(types.String)
			if !ok {
				return nil
			}
			keys = append(keys, string(s))
			e = call.Args()[0]
		default:
			return nil
		}
	}
}

// readPath reads a field path through maps only, returning the plain value found. ok is false when
// the path leaves maps or a key is missing; the caller then runs the CEL program.
func (a *activation) readPath(path []string) (any, bool) {
	var cur any
	switch path[0] {
	case varInventory:
		cur = &a.inventory
	case varReturned:
		cur = &a.returned
	case varPropagation:
		cur = &a.propagation
	default:
		cur = a.t.obj
	}
	for _, key := range path[1:] {
		var found bool
		switch m := cur.(type) {
		case *fieldsVal:
			cur, found = m.rawField(key)
		case map[string]any:
			cur, found = m[key]
		case map[string]string:
			cur, found = m[key]
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}

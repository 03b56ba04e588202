package collector

import (
	"strings"

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
// A successful field read has a small fixed cost, far below the runtime cost limit. Comparisons of
// such a path with an int, string or bool literal (`returned.status.readyReplicas > 0`) are
// evaluated directly in the same way when the field holds a value of the literal's type.
type expression struct {
	prg  cel.Program
	path []string // variable, then keys; nil when the expression is not a plain field path
	// cmp is set when the expression compares a plain field path with a literal.
	cmp *comparison
	// loops says whether the expression has a comprehension (all(), exists(), map(), filter(), …):
	// only those can run long enough to need the time budget, and only they check it.
	loops bool
}

// newExpression returns the expression of a program and its checked AST.
func newExpression(prg cel.Program, root ast.Expr) *expression {
	return &expression{prg: prg, path: attributePath(root), cmp: comparisonOf(root), loops: hasComprehension(root)}
}

// eval returns the expression's value: a CEL value (ref.Val), or, from a direct field read, the
// plain Go value that CEL would have converted. An expression with a comprehension runs under b.
func (e *expression) eval(a *activation, b *timeBudget) (any, error) {
	if e.path != nil {
		if v, ok := a.readPath(e.path); ok {
			return v, nil
		}
	}
	if e.cmp != nil {
		if v, ok := a.readPath(e.cmp.path); ok {
			if out, ok := e.cmp.apply(v); ok {
				return out, nil
			}
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

// comparison is an expression `path op literal` (or `literal op path`) whose literal is an int,
// a string or a bool, and whose op is one of ==, !=, <, <=, >, >= (only == and != for a bool).
//
// Its direct evaluation applies only when the field read gives a plain value of exactly the
// literal's type (int64, string, bool); then CEL would run the same overload on the same values,
// so the result is the same. A heterogeneous comparison (1.0 == 1), a missing key, a null and
// anything else run the CEL program. The direct evaluation has a small fixed cost (a string
// comparison's grows with the string: strings longer than maxDirectString run in CEL, where the
// runtime cost limit applies), far below the runtime cost limit.
type comparison struct {
	path    []string
	op      string
	lit     any  // int64, string or bool
	flipped bool // the literal is the left operand
}

// maxDirectString is the longest string a comparison evaluates directly (CEL's runtime cost of
// comparing it is about a tenth of its length).
const maxDirectString = 64 << 10

// comparisonOf returns the comparison a checked expression is, or nil.
func comparisonOf(e ast.Expr) *comparison {
	if e.Kind() != ast.CallKind {
		return nil
	}
	call := e.AsCall()
	if call.IsMemberFunction() || len(call.Args()) != 2 {
		return nil
	}
	op := call.FunctionName()
	switch op {
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals:
	default:
		return nil
	}
	l, r := call.Args()[0], call.Args()[1]
	c := &comparison{op: op}
	if l.Kind() == ast.LiteralKind {
		l, r, c.flipped = r, l, true
	}
	if r.Kind() != ast.LiteralKind {
		return nil
	}
	if c.path = attributePath(l); c.path == nil {
		return nil
	}
	switch lit := r.AsLiteral().(type) {
	case types.Int:
		c.lit = int64(lit)
	case types.String:
		c.lit = string(lit)
	case types.Bool:
		if op != operators.Equals && op != operators.NotEquals {
			return nil
		}
		c.lit = bool(lit)
	default:
		return nil
	}
	return c
}

// apply compares a field's plain value with the literal; ok is false when CEL must do it.
func (c *comparison) apply(v any) (out types.Bool, ok bool) {
	var d int // the sign of field - literal
	switch lit := c.lit.(type) {
	case int64:
		x, isInt := v.(int64)
		if !isInt {
			return false, false
		}
		d = cmpInt(x, lit)
	case string:
		x, isString := v.(string)
		if !isString || len(x) > maxDirectString {
			return false, false
		}
		d = strings.Compare(x, lit)
	case bool:
		x, isBool := v.(bool)
		if !isBool {
			return false, false
		}
		if x != lit {
			d = 1
		}
	}
	if c.flipped {
		d = -d
	}
	switch c.op {
	case operators.Equals:
		return d == 0, true
	case operators.NotEquals:
		return d != 0, true
	case operators.Less:
		return d < 0, true
	case operators.LessEquals:
		return d <= 0, true
	case operators.Greater:
		return d > 0, true
	default: // operators.GreaterEquals
		return d >= 0, true
	}
}

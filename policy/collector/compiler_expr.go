package collector

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// compileExpr parses, checks, estimates the cost of and plans one expression. It returns the
// program and the checked AST, or field errors at p.
func (c *Compiler) compileExpr(p *field.Path, expr string) (*expression, *cel.Ast, field.ErrorList) {
	if strings.TrimSpace(expr) == "" {
		return nil, nil, field.ErrorList{field.Required(p, "")}
	}
	if n := len([]rune(expr)); n > MaxExpressionLength {
		return nil, nil, field.ErrorList{field.TooLongCharacters(p, expr, MaxExpressionLength)}
	}
	a, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, expr, "compilation failed: "+iss.String())}
	}
	est, err := c.env.EstimateCost(a, newCostEstimator(a.NativeRep(), c.obj, c.status))
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(p, fmt.Errorf("estimating the cost: %w", err))}
	}
	if est.Max > CostLimit {
		return nil, nil, field.ErrorList{field.Forbidden(p, fmt.Sprintf(
			"estimated expression cost exceeds budget by factor of %s (try simplifying the expression; "+
				"the estimate assumes reported lists and maps of up to %d entries and strings of up to %d bytes)",
			costFactor(est.Max), dynMaxElements, dynMaxStringBytes))}
	}
	prg, err := c.env.Program(a, cel.InterruptCheckFrequency(interruptCheckFrequency))
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, expr, "program construction failed: "+err.Error())}
	}
	root := a.NativeRep().Expr()
	return newExpression(prg, root), a, nil
}

func costFactor(cost uint64) string {
	return fmt.Sprintf("%.1fx", float64(cost)/float64(CostLimit))
}

// isUnknownType says whether a static type leaves the runtime type open.
func isUnknownType(t *types.Type) bool {
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.TypeParamKind:
		return true
	}
	return false
}

func isNumericSubjectType(t *types.Type) bool {
	if isUnknownType(t) {
		return true
	}
	switch t.Kind() {
	case types.IntKind, types.UintKind, types.DoubleKind, types.StringKind:
		return true
	}
	return false
}

func isConstBool(a *cel.Ast, want bool) bool {
	e := a.NativeRep().Expr()
	return e.Kind() == ast.LiteralKind && e.AsLiteral() == types.Bool(want)
}

func isIdent(a *cel.Ast, name string) bool {
	e := a.NativeRep().Expr()
	return e.Kind() == ast.IdentKind && e.AsIdent() == name
}

package aggregation

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// maxExpandedTerms bounds a module's rules with every rule they use written out. OPA's type
// checker, which cannot be stopped, walks the type of such a value in full: `a1 := [a0, a0];
// a2 := [a1, a1]; …` stands for 2^30 terms in 30 lines and held compilation for half a minute
// and more. 2^24 terms type-check in about 0.4 s.
const maxExpandedTerms = 1 << 24

// checkExpansion refuses a module with a rule that, with every use of a rule of the module
// replaced by that rule's terms, has more than maxExpandedTerms terms. It over-counts (a local
// variable named like a rule counts as the rule), never under-counts uses within the module.
func checkExpansion(m *ast.Module) compileErrors {
	byName := map[ast.Var][]*ast.Rule{}
	for _, r := range m.Rules {
		if v, ok := r.Head.Ref()[0].Value.(ast.Var); ok {
			byName[v] = append(byName[v], r)
		}
	}
	memo := map[ast.Var]int64{}
	var size func(name ast.Var) int64
	size = func(name ast.Var) int64 {
		if n, ok := memo[name]; ok {
			return n
		}
		memo[name] = 1 // a cycle is the compiler's error to report
		var n int64
		for _, r := range byName[name] {
			n += expandedTerms(r, true, func(v ast.Var) int64 {
				if v == name || byName[v] == nil {
					return 0
				}
				return size(v)
			})
			n = min(n, maxExpandedTerms+1)
		}
		memo[name] = n
		return n
	}
	for _, r := range m.Rules {
		name, ok := r.Head.Ref()[0].Value.(ast.Var)
		if !ok || size(name) <= maxExpandedTerms {
			continue
		}
		ce := compileError{Msg: fmt.Sprintf("rego_expansion_error: rule %s stands for more than %d terms once the rules it uses are written out", name, maxExpandedTerms)}
		if r.Location != nil {
			ce.Row, ce.Col = r.Location.Row, r.Location.Col
		}
		return compileErrors{ce}
	}
	return nil
}

// expandedTerms counts the terms of x, adding ruleSize(v) for each variable v where expand holds:
// in values and assignments, but not in the operands of calls, whose results have the types the
// builtin or function declares (each rule they use is counted on its own).
func expandedTerms(x any, expand bool, ruleSize func(ast.Var) int64) int64 {
	var n int64
	ast.NewGenericVisitor(func(y any) bool {
		if n > maxExpandedTerms {
			return true
		}
		switch v := y.(type) {
		case *ast.Expr:
			if v.IsCall() && !v.IsAssignment() && !v.IsEquality() {
				for _, op := range v.Operands() {
					n += expandedTerms(op, false, ruleSize)
				}
				return true
			}
		case *ast.Term:
			n++
			switch tv := v.Value.(type) {
			case ast.Call:
				for _, arg := range tv[1:] {
					n += expandedTerms(arg, false, ruleSize)
				}
				return true
			case ast.Var:
				if expand {
					n += ruleSize(tv)
				}
			}
		}
		return false
	}).Walk(x)
	return min(n, maxExpandedTerms+1)
}

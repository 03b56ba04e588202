package aggregation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/statusfold/statusfold/policy/luahealth"
)

// Rule names of the module contract (docs/aggregation.md).
const (
	ruleCombine  = "combine"
	ruleStatus   = "status"
	ruleWECRank  = "wec_rank"
	ruleFinalize = "finalize"
)

// module is one compiled aggregation module. It is immutable after compileModule and safe for
// concurrent use.
type module struct {
	name string // file name, e.g. "builtin/deployment.rego" or "AggregationPolicy/my-policy"
	pkg  string // e.g. "data.statusfold.builtin.deployment"
	lim  limits

	static    *plan                   // combine evaluated without input; nil when it needs input.object or in full mode
	combineQ  *rego.PreparedEvalQuery // nil in full mode
	rankQ     *rego.PreparedEvalQuery // optional
	finalizeQ *rego.PreparedEvalQuery // optional
	statusQ   *rego.PreparedEvalQuery // full mode only

	script     *luahealth.Script // Lua mode (lua.go): the worst WEC by this script; no Rego
	withHealth bool              // the WEC documents carry each WEC's verdict (user modules)
}

// compileError is a Rego compile problem with its location.
type compileError struct {
	Row, Col int
	Msg      string
}

func (e compileError) Error() string {
	if e.Row > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Row, e.Col, e.Msg)
	}
	return e.Msg
}

// compileErrors is what compileModule returns when the source is not a valid module.
type compileErrors []compileError

func (es compileErrors) Error() string {
	msg := ""
	for i, e := range es {
		if i > 0 {
			msg += "; "
		}
		msg += e.Error()
	}
	return msg
}

func fromASTErrors(errs ast.Errors) compileErrors {
	out := make(compileErrors, 0, len(errs))
	seen := map[[2]int]bool{}
	for _, e := range errs {
		ce := compileError{Msg: e.Code + ": " + e.Message}
		if e.Location != nil {
			ce.Row, ce.Col = e.Location.Row, e.Location.Col
		}
		if e.Code == ast.ParseErr && seen[[2]int{ce.Row, ce.Col}] {
			continue // the parser reports some problems twice, the second time with a hint
		}
		seen[[2]int{ce.Row, ce.Col}] = true
		out = append(out, ce)
	}
	return out
}

// compileModule parses and compiles one module with the sandbox capabilities, checks that it
// defines `combine` or `status`, prepares its queries and evaluates a static `combine`.
// A bad module yields compileErrors (with Rego line and column) or a planError. parent (nil:
// none) bounds the static evaluation as well; the module keeps lim.
func compileModule(name, src string, lim limits, parent context.Context) (*module, error) {
	parsed, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		var astErrs ast.Errors
		if errors.As(err, &astErrs) {
			return nil, fromASTErrors(astErrs)
		}
		return nil, compileErrors{{Msg: err.Error()}}
	}
	if errs := checkExpansion(parsed); errs != nil {
		return nil, errs
	}
	caps := SandboxCapabilities()
	c := ast.NewCompiler().WithCapabilities(caps).WithEnablePrintStatements(false)
	mods := map[string]*ast.Module{name: parsed}
	if libraryModules(); libErr != nil {
		return nil, libErr
	}
	for n, lib := range libraryModules() {
		if n != name {
			mods[n] = lib
		}
	}
	c.Compile(mods)
	if c.Failed() {
		return nil, fromASTErrors(c.Errors)
	}
	rules := map[string]bool{}
	for _, r := range parsed.Rules {
		rules[r.Head.Ref()[0].Value.(ast.Var).String()] = true
	}
	m := &module{name: name, pkg: parsed.Package.Path.String(), lim: lim}
	if !rules[ruleCombine] && !rules[ruleStatus] {
		return nil, compileErrors{{Row: parsed.Package.Location.Row, Col: parsed.Package.Location.Col,
			Msg: fmt.Sprintf("rego_missing_rule: package %s defines neither %q (per-field combiners) nor %q (the whole aggregate)",
				strings.TrimPrefix(parsed.Package.Path.String(), "data."), ruleCombine, ruleStatus)}}
	}
	prepare := func(rule string) (*rego.PreparedEvalQuery, error) {
		if !rules[rule] {
			return nil, nil
		}
		q, err := rego.New(
			rego.Compiler(c),
			rego.Query(m.pkg+"."+rule),
			rego.Capabilities(caps),
			rego.StrictBuiltinErrors(true),
			rego.GenerateJSON(boundedJSON(lim.maxOutputBytes)),
		).PrepareForEval(context.Background())
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", rule, err)
		}
		return &q, nil
	}
	if rules[ruleStatus] {
		if m.statusQ, err = prepare(ruleStatus); err != nil {
			return nil, err
		}
		return m, nil
	}
	for _, p := range []struct {
		q    **rego.PreparedEvalQuery
		rule string
	}{{&m.combineQ, ruleCombine}, {&m.rankQ, ruleWECRank}, {&m.finalizeQ, ruleFinalize}} {
		if *p.q, err = prepare(p.rule); err != nil {
			return nil, err
		}
	}
	if err := m.evalStatic(parent); err != nil {
		return nil, err
	}
	return m, nil
}

// evalStatic evaluates `combine` without input, once, at compile time, within compileEvalTimeout
// and parent (nil: none); when it is defined without input, it is the module's static plan.
func (m *module) evalStatic(parent context.Context) error {
	atCompile := m.lim
	atCompile.timeout, atCompile.parent = compileEvalTimeout, parent
	ev := newEvaluation(atCompile)
	v, ok, err := m.eval(ev, m.combineQ, nil)
	ev.end()
	if err != nil {
		return fmt.Errorf("evaluating %s without input: %w", ruleCombine, err)
	}
	if ok {
		m.static, err = parsePlan(v)
	}
	return err
}

// libraryModules are the built-in modules (and the helper package data.statusfold.builtin.health)
// compiled alongside every module, built-in or user, so that modules can import them.
var (
	libOnce sync.Once
	libMods map[string]*ast.Module
	libErr  error
)

func libraryModules() map[string]*ast.Module {
	libOnce.Do(func() {
		srcs, err := BuiltinSources()
		if err != nil {
			libErr = err
			return
		}
		libMods = map[string]*ast.Module{}
		for n, src := range srcs {
			if strings.HasSuffix(n, "_test.rego") {
				continue
			}
			m, err := ast.ParseModuleWithOpts("builtin/"+n, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				libErr = fmt.Errorf("built-in module %s: %w", n, err)
				return
			}
			libMods["builtin/"+n] = m
		}
	})
	return libMods
}

// planFor returns the combiner plan for obj: the static one, or `combine` evaluated with
// input.object when it depends on the object.
func (m *module) planFor(ev *evaluation, obj map[string]any) (*plan, error) {
	if m.static != nil {
		return m.static, nil
	}
	in, err := toValue(map[string]any{"object": obj})
	if err != nil {
		return nil, err
	}
	v, ok, err := m.eval(ev, m.combineQ, in)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: rule %s is undefined for this object", m.name, ruleCombine)
	}
	return parsePlan(v)
}

// toValue converts a JSON-like Go value to an OPA AST value once, so prepared queries need not.
func toValue(v any) (ast.Value, error) {
	return ast.InterfaceToValue(v)
}

// NormalizeNumbers returns v with every number as int64 when integral (int, int32, json.Number,
// or a float64 without fraction) and float64 otherwise, recursively, in new maps and lists — the
// form the engine and runtime.DeepCopyJSONValue work with, and in which 2 and 2.0 are one value.
func NormalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = NormalizeNumbers(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = NormalizeNumbers(x)
		}
		return out
	}
	if n := toNum(v); n.ok {
		return n.value()
	}
	return v
}

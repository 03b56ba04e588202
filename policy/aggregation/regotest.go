package aggregation

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// RunRegoTests runs the Rego unit tests (rules named test_*) of the built-in modules together with
// extra, a map of file name to Rego source (user modules and their tests), with the sandbox
// capabilities. Built-in modules and the helper package data.statusfold.builtin.health are visible
// to the extra files.
func RunRegoTests(ctx context.Context, extra map[string]string) ([]*tester.Result, error) {
	srcs, err := BuiltinSources()
	if err != nil {
		return nil, err
	}
	mods := map[string]*ast.Module{}
	parse := func(name, src string) error {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		mods[name] = m
		return nil
	}
	for n, s := range srcs {
		if err := parse("builtin/"+n, s); err != nil {
			return nil, fmt.Errorf("built-in %s: %w", n, err)
		}
	}
	for n, s := range extra {
		if err := parse(n, s); err != nil {
			return nil, err
		}
	}
	c := ast.NewCompiler().WithCapabilities(SandboxCapabilities()).WithEnablePrintStatements(false)
	ch, err := tester.NewRunner().SetCompiler(c).SetModules(mods).RaiseBuiltinErrors(true).RunTests(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []*tester.Result
	for r := range ch {
		out = append(out, r)
	}
	return out, nil
}

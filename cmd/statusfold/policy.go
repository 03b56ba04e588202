package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/webhooks/offline"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with aggregation policies (Rego)",
	}
	cmd.AddCommand(newPolicyTestCommand())
	return cmd
}

// propertyOptions are the flags of `statusfold policy test` for --property.
type propertyOptions struct {
	on    bool
	cases int
	seed  uint64
	lua   string
}

func newPolicyTestCommand() *cobra.Command {
	var verbose bool
	prop := &propertyOptions{}
	cmd := &cobra.Command{
		Use:   "test [FILE...]",
		Short: "Run the Rego unit tests of the built-in aggregation modules and of the given files",
		Long: `test runs the Rego unit tests (rules named test_*) of the built-in aggregation modules together
with the given files, in the aggregation sandbox. A FILE ending in .rego is a module or a test file
(built-in modules, e.g. data.statusfold.builtin.deployment, and the helpers in
data.statusfold.builtin.health can be imported); any other FILE is an AggregationPolicy, whose Rego is
added and whose examples are run as the admission check runs them. Exit status 1 when any test fails.

--property also checks each AggregationPolicy against the principle of docs/aggregation.md: over
generated multi-WEC cases (the built-in kinds' generators, or Argo CD's fixtures of the kind's Lua
health check), Argo CD's health of the aggregate is the worst WEC's — so a rule that hides a degraded
WEC is found before it is applied. The first counterexamples are printed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runPolicyTest(cmd.Context(), cmd.OutOrStdout(), args, verbose); err != nil || !prop.on {
				return err
			}
			return runPolicyProperty(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, prop)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every test, not only failures")
	cmd.Flags().BoolVar(&prop.on, "property", false, "also check that each AggregationPolicy keeps the worst WEC's Argo CD health")
	cmd.Flags().IntVar(&prop.cases, "cases", 1000, "with --property: cases per policy")
	cmd.Flags().Uint64Var(&prop.seed, "seed", 1, "with --property: the random seed")
	cmd.Flags().StringVar(&prop.lua, "lua-health", "", "with --property: "+luaHealthFlagHelp)
	return cmd
}

func runPolicyTest(ctx context.Context, out io.Writer, files []string, verbose bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	extra := map[string]string{}
	failed := 0
	var adm *offline.Admission // built at the first AggregationPolicy file
	for _, f := range files {
		if strings.HasSuffix(f, ".rego") {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			extra[f] = string(b)
			continue
		}
		if adm == nil {
			var err error
			if adm, err = offline.NewAdmission(); err != nil {
				return err
			}
		}
		objs, err := admitFile(ctx, adm, f, policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"))
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL %v\n", err)
			continue
		}
		for _, o := range objs {
			p := o.(*policyv1alpha1.AggregationPolicy)
			extra[f+"#"+filepath.Base(p.Name)+".rego"] = p.Spec.Rego
			errs := aggregation.ValidatePolicy(p)
			for _, e := range errs {
				failed++
				fmt.Fprintf(out, "FAIL %s: %v\n", f, e)
			}
			if len(errs) == 0 && verbose {
				fmt.Fprintf(out, "PASS %s: compiles, %d examples\n", f, len(p.Spec.Examples))
			}
		}
	}
	results, err := aggregation.RunRegoTests(ctx, extra)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	sort.Slice(results, func(i, j int) bool {
		if results[i].Package != results[j].Package {
			return results[i].Package < results[j].Package
		}
		return results[i].Name < results[j].Name
	})
	passed := 0
	for _, r := range results {
		if r.Pass() {
			passed++
			if verbose {
				fmt.Fprintf(out, "PASS %s.%s\n", strings.TrimPrefix(r.Package, "data."), r.Name)
			}
			continue
		}
		failed++
		why := "failed"
		if r.Error != nil {
			why = r.Error.Error()
		}
		fmt.Fprintf(out, "FAIL %s.%s: %s\n", strings.TrimPrefix(r.Package, "data."), r.Name, why)
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d failed", failed)}
	}
	return nil
}

// runPolicyProperty runs the property for every AggregationPolicy among files (they passed the
// admission check already).
func runPolicyProperty(ctx context.Context, out, warn io.Writer, files []string, o *propertyOptions) error {
	if o.cases <= 0 {
		return fmt.Errorf("--cases %d: must be positive", o.cases)
	}
	adm, err := offline.NewAdmission()
	if err != nil {
		return err
	}
	failed := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".rego") {
			continue
		}
		objs, err := admitFile(ctx, adm, f, policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"))
		if err != nil {
			return err
		}
		for _, obj := range objs {
			p := obj.(*policyv1alpha1.AggregationPolicy)
			e, err := luaEngine(o.lua, warn)
			if err != nil {
				return err
			}
			if errs := e.SetPolicy(p); len(errs) > 0 {
				return fmt.Errorf("%s: %w", f, errs.ToAggregate())
			}
			gk := schema.GroupKind{Group: p.Spec.Target.Group, Kind: p.Spec.Target.Kind}
			rep, err := e.CheckProperty(gk, o.cases, o.seed)
			if err != nil {
				failed++
				fmt.Fprintf(out, "FAIL property %s (%s): %v\n", p.Name, gk, err)
				continue
			}
			if rep.Failed == 0 {
				fmt.Fprintf(out, "PASS property %s (%s, health by %s): %d cases from %s\n", p.Name, gk, e.HealthCheck(gk), rep.Cases, rep.Source)
				continue
			}
			failed++
			fmt.Fprintf(out, "FAIL property %s (%s, health by %s): %d of %d cases from %s hide the worst WEC's health\n",
				p.Name, gk, e.HealthCheck(gk), rep.Failed, rep.Cases, rep.Source)
			for _, c := range rep.Failures {
				fmt.Fprintf(out, "  %s\n", strings.ReplaceAll(c.String(), "\n", "\n  "))
			}
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d policies fail the property", failed)}
	}
	return nil
}

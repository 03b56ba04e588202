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

func newPolicyTestCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test [FILE...]",
		Short: "Run the Rego unit tests of the built-in aggregation modules and of the given files",
		Long: `test runs the Rego unit tests (rules named test_*) of the built-in aggregation modules together
with the given files, in the aggregation sandbox. A FILE ending in .rego is a module or a test file
(built-in modules, e.g. data.statusfold.builtin.deployment, and the helpers in
data.statusfold.builtin.health can be imported); any other FILE is an AggregationPolicy, whose Rego is
added and whose examples are run as the admission check runs them. Exit status 1 when any test fails.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyTest(cmd.Context(), cmd.OutOrStdout(), args, verbose)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every test, not only failures")
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

package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/statusfold/statusfold/aggregator"
)

// version is set at link time (-ldflags "-X main.version=…"); otherwise it comes from the module's
// build information.
var version = ""

// exitError carries a process exit status, e.g. 1 for "the input is invalid", without printing a
// second message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "statusfold",
		Short: "Return the reported state of multi-cluster workloads to where users look for it",
		Long: `statusfold combines the per-cluster reported state (WorkStatus objects) of workloads that a
KubeStellar-style control plane propagated to many clusters: StatusCollectors (CEL, SQL-like) produce
CombinedStatus objects, and the workload object's own .status gets a copy (one cluster) or a Rego
aggregate (many clusters).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newManagerCommand(aggregator.Run))
	root.AddCommand(newLocalCommand(), newWECSimCommand(), newStatusCommand())
	root.AddCommand(newAggregateCommand(), newPolicyCommand())
	root.AddCommand(newValidateCommand())
	root.AddCommand(newEvalCommand())
	root.AddCommand(newKubeStellarCommand())
	return root
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the statusfold version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "statusfold %s\n", buildVersion())
			return err
		},
	}
}

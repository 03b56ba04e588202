package main

import (
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/statusfold/statusfold/local"
)

func newLocalCommand() *cobra.Command {
	var opts local.Options
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the embedded default: a local control plane with statusfold installed and running",
		Long: `local starts kube-apiserver and etcd (` + local.K8sVersion + `, from ~/.cache/statusfold/k8s or
$KUBEBUILDER_ASSETS; built from Go modules on first use), installs statusfold's CRDs, runs the
controller and webhooks, writes a kubeconfig and prints 'export KUBECONFIG=…'. It stays in the
foreground until Ctrl-C, then stops everything. With --demo it also applies the samples and runs
simulated WECs (see 'statusfold wec-sim').`,
		Example: `  statusfold local --demo
  statusfold local --data-dir ~/.statusfold   # keep state between runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go func() {
				// A second Ctrl-C kills the process the default way.
				<-ctx.Done()
				stop()
			}()
			opts.Out = cmd.OutOrStdout()
			opts.Manager = localManager
			return local.Run(ctx, opts)
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "keep etcd data and the kubeconfig in this folder between runs (default: a temporary folder, removed at exit)")
	cmd.Flags().StringVar(&opts.AssetsDir, "assets-dir", "", "folder with kube-apiserver, etcd and kubectl (default $KUBEBUILDER_ASSETS or ~/.cache/statusfold/k8s/"+local.K8sVersion+")")
	cmd.Flags().BoolVar(&opts.Demo, "demo", false, "apply the samples and run simulated WECs")
	cmd.Flags().IntVar(&opts.WECs, "wecs", 5, "number of simulated WECs (with --demo)")
	cmd.Flags().Int64Var(&opts.Seed, "seed", 1, "simulation seed (with --demo)")
	cmd.Flags().DurationVar(&opts.Interval, "interval", time.Second, "simulation tick (with --demo)")
	cmd.Flags().StringVar(&opts.WDSName, "wds-name", "wds1", "name of this WDS")
	return cmd
}

// localManager runs the statusfold manager in-process; nil until the controller package exists.
var localManager local.ManagerFunc

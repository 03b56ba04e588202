package main

import (
	"fmt"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	sfscheme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/wecsim"
)

// kubeFlags are the connection flags of the commands that talk to an apiserver.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "path of the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&k.context, "context", "", "kubeconfig context to use")
}

func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// clients returns a controller-runtime client with statusfold's scheme and a dynamic REST mapper.
func (k *kubeFlags) clients() (client.Client, *rest.Config, error) {
	cfg, err := k.loader().ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	return newClient(cfg, httpClient)
}

func newClient(cfg *rest.Config, httpClient *http.Client) (client.Client, *rest.Config, error) {
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: sfscheme.New(), Mapper: mapper, HTTPClient: httpClient})
	return c, cfg, err
}

func newWECSimCommand() *cobra.Command {
	var (
		kf       kubeFlags
		its      kubeFlags
		n        int
		seed     int64
		interval time.Duration
		ticks    int
		wdsName  string
	)
	cmd := &cobra.Command{
		Use:   "wec-sim",
		Short: "Simulate WECs: register ManagedClusters and write WorkStatuses for bound workload objects",
		Long: `wec-sim registers N simulated WECs (wec1…wecN) as OCM ManagedClusters with labels
location-group=edge, name=<wec>, region=<us-east|eu-west|ap-south>, and on every tick writes, for
every workload object a Binding sends to them, the WorkStatus that KubeStellar's WEC-side agent would
write (mailbox namespace = WEC name). The scenario is deterministic for a seed: Deployments roll out at
different speeds, one WEC lags behind new generations, one fails (ProgressDeadlineExceeded; Jobs exceed
their backoff limit), one joins late and one leaves. Deployments, Jobs and Pods are simulated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			wds, _, err := kf.clients()
			if err != nil {
				return err
			}
			itsClient := wds
			if its.kubeconfig != "" || its.context != "" {
				if itsClient, _, err = its.clients(); err != nil {
					return err
				}
			}
			r := &wecsim.Runner{
				WDS: wds, ITS: itsClient, Mapper: wds.RESTMapper(), Scenario: wecsim.NewScenario(seed, n),
				WDSName: wdsName, Interval: interval, Ticks: ticks, Log: cmd.ErrOrStderr(),
			}
			for _, w := range r.Scenario.WECs {
				fmt.Fprintf(cmd.ErrOrStderr(), "wec-sim: %s %s region=%s speed=%d\n", w.Name, w.Role, w.Labels[wecsim.LabelRegion], w.Speed)
			}
			return r.Run(ctx)
		},
	}
	kf.register(cmd)
	cmd.Flags().StringVar(&its.kubeconfig, "its-kubeconfig", "", "kubeconfig of the ITS when it is not the WDS")
	cmd.Flags().StringVar(&its.context, "its-context", "", "kubeconfig context of the ITS")
	cmd.Flags().IntVar(&n, "wecs", 5, "number of simulated WECs")
	cmd.Flags().Int64Var(&seed, "seed", 1, "scenario seed (same seed, same scenario)")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between ticks")
	cmd.Flags().IntVar(&ticks, "ticks", 0, "stop after this many ticks (0: run until interrupted)")
	cmd.Flags().StringVar(&wdsName, "wds-name", "wds1", "WDS name for the label transport.kubestellar.io/originWdsName")
	return cmd
}

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/local"
	"github.com/statusfold/statusfold/webhooks"
)

func newLocalCommand() *cobra.Command {
	var (
		opts        local.Options
		managerLogs bool
	)
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
			// The manager's info logs would drown the tour; errors always reach stderr.
			if managerLogs {
				ctrl.SetLogger(klog.NewKlogr())
			} else {
				ctrl.SetLogger(logr.New(errorsOnly{klog.NewKlogr().GetSink()}))
			}
			wdsName := opts.WDSName
			opts.Manager = func(ctx context.Context, cp *local.ControlPlane, ready func()) error {
				return runLocalManager(ctx, cp, wdsName, ready)
			}
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
	cmd.Flags().BoolVar(&managerLogs, "manager-logs", false, "print the manager's info logs to stderr too (errors are always printed)")
	return cmd
}

// errorsOnly drops info logs and keeps error logs.
type errorsOnly struct{ logr.LogSink }

func (errorsOnly) Enabled(int) bool { return false }

func (e errorsOnly) WithValues(kv ...any) logr.LogSink {
	return errorsOnly{e.LogSink.WithValues(kv...)}
}

func (e errorsOnly) WithName(name string) logr.LogSink { return errorsOnly{e.LogSink.WithName(name)} }

// runLocalManager runs the controllers and the admission webhooks in-process: the webhook server
// listens on a free port of 127.0.0.1, statusfold's webhook configurations call it by URL, and
// the built-in certificates (package certs, kept in memory, files in the data folder for the
// server) provide its serving certificate and the configurations' CA bundle.
func runLocalManager(ctx context.Context, cp *local.ControlPlane, wdsName string, ready func()) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	validating, mutating := webhooks.Configurations(webhooks.URLClientConfig(fmt.Sprintf("https://127.0.0.1:%d", port), nil))
	for _, obj := range []client.Object{validating, mutating} {
		if err := createOrReplace(ctx, cp.Client, obj); err != nil {
			return fmt.Errorf("webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	certDir := filepath.Join(cp.DataDir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	mgr, _, err := aggregator.NewManager(aggregator.Config{
		Options:     aggregator.Options{WDSName: wdsName},
		WDS:         cp.Config,
		MetricsAddr: "0",
		ProbeAddr:   "0",
		WebhookPort: port,
		CertDir:     certDir,
		SetupWebhooks: func(mgr manager.Manager) error {
			if _, err := webhooks.SetupBuiltinCerts(mgr, certs.Options{
				IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
				DNSNames:    []string{"localhost"},
				CertDir:     certDir,
			}); err != nil {
				return err
			}
			return webhooks.Setup(mgr, webhooks.Options{})
		},
	})
	if err != nil {
		return err
	}
	started := mgr.GetWebhookServer().StartedChecker()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil)
		if wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			return started(req) == nil, nil
		}) == nil {
			ready()
		}
	}()
	return mgr.Start(ctx)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createOrReplace creates obj, or replaces what is stored under its name (a --data-dir keeps the
// previous run's configurations, which point at a port that is gone).
func createOrReplace(ctx context.Context, c client.Client, obj client.Object) error {
	cur := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	switch {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, obj)
	case err != nil:
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	return c.Update(ctx, obj)
}

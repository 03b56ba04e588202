package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/webhooks"
)

// managerOptions are the flags of `statusfold manager`: the Config fields that flags set directly,
// and the flags that the command turns into Config fields.
type managerOptions struct {
	cfg           aggregator.Config
	wdsKubeconfig string
	itsKubeconfig string
	resolution    string
	logConfig     *textlogger.Config
	webhooksOn    bool
	certMode      string
	timeBudget    time.Duration
	webhookSvc    string
	namespace     string
	memoryLimit   string
	gcPercent     int
	startupGC     int
	// The KubeFlex lookup of the spaces (spaces.go) and the names two releases must not share.
	spaces        spaceOptions
	certSecret    string
	validatingCfg string
	mutatingCfg   string
	// Admission in a WDS that is another apiserver (wdsadmission.go): where it calls the
	// webhook server, and, once the WDS is found to be one, what it needs.
	webhookURL string
	admission  *wdsAdmission
}

// newManagerCommand is `statusfold manager`: the controllers and the admission webhooks, run by
// run (aggregator.Run; tests pass a function that records the Config the flags produced).
func newManagerCommand(run func(context.Context, aggregator.Config) error) *cobra.Command {
	return managerCommand(&managerOptions{logConfig: textlogger.NewConfig()}, run)
}

// managerCommand is newManagerCommand with its options at hand (tests change them after the
// flags are registered).
func managerCommand(o *managerOptions, run func(context.Context, aggregator.Config) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the statusfold controllers (Bindings, CombinedStatus, status return) and admission webhooks",
		Long: `Run the statusfold controllers against a WDS (and an ITS, by default the same cluster):
resolve BindingPolicies into Bindings, keep CombinedStatus objects, and return reported state into
the workload objects' own .status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), run) },
	}
	o.register(cmd.Flags())
	return cmd
}

// register adds the flags of `statusfold manager` to f, the log flags (-v, --vmodule) included.
func (o *managerOptions) register(f *pflag.FlagSet) {
	cfg := &o.cfg
	f.StringVar(&o.wdsKubeconfig, "wds-kubeconfig", "", "kubeconfig of the WDS (default: $KUBECONFIG, then in-cluster)")
	f.StringVar(&o.itsKubeconfig, "its-kubeconfig", "", "kubeconfig of the ITS (default: the WDS)")
	f.StringVar(&cfg.WDSName, "wds-name", "wds1", "this WDS's name: only WorkStatuses labelled transport.kubestellar.io/originWdsName=NAME are read")
	f.StringVar(&o.resolution, "binding-resolution", string(aggregator.BindingResolutionInternal),
		"internal: statusfold writes Bindings; external: read Bindings written by another controller (e.g. KubeStellar)")
	f.DurationVar(&cfg.CoalesceDelay, "coalesce-delay", aggregator.DefaultCoalesceDelay, "events for one object within this delay of its last evaluation cause one evaluation (0: evaluate at once; events during an evaluation still coalesce)")
	f.DurationVar(&cfg.MaxWriteDelay, "max-write-delay", aggregator.DefaultMaxWriteDelay,
		"cap of the adaptive delay between two writes of one workload object's CombinedStatuses and status: 0 delay while the apiserver has room, up to this under write pressure (0: pacing off)")
	f.DurationVar(&o.timeBudget, "collector-time-budget", collector.DefaultTimeBudget,
		"wall time the comprehensions of one StatusCollector may take per evaluation of one object; after it they fail with a row error")
	f.IntVar(&cfg.MaxReportedStatusBytes, "max-reported-status-bytes", aggregator.DefaultMaxReportedStatusBytes,
		"cap on one WEC's reported status (a WorkStatus's status, as JSON): a larger one is not evaluated and its WEC's rows say so (0: no cap)")
	f.DurationVar(&cfg.ObjectTimeBudget, "object-time-budget", aggregator.DefaultObjectTimeBudget,
		"wall time the comprehensions of all the StatusCollectors of one object may take together per evaluation, over all its WECs; after it they fail with a row error")
	f.IntVar(&cfg.Workers, "workers", aggregator.DefaultWorkers, "objects evaluated in parallel")
	f.StringVar(&cfg.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
	f.StringVar(&cfg.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	f.StringVar(&o.memoryLimit, "memory-limit", "",
		"soft memory limit of the Go runtime (a quantity, e.g. 900Mi; 0: none) when GOMEMLIMIT is unset; default 90% of the container's cgroup memory limit")
	f.IntVar(&o.gcPercent, "gc-percent", aggregator.DefaultGCPercent,
		"the Go garbage collector's target percentage when GOGC is unset: the heap grows by this much of the live heap between collections (lower: less memory, more collector CPU; negative: off)")
	f.IntVar(&o.startupGC, "startup-gc-percent", aggregator.DefaultStartupGCPercent,
		"the garbage collector's target percentage while the caches fill at start, until every object has been evaluated once (lower than --gc-percent: a lower peak of memory for more collector CPU during the start; 0: --gc-percent from the start)")
	f.StringVar(&cfg.PprofAddr, "pprof-bind-address", "", "address of the Go profiler's /debug/pprof/ endpoints (empty or 0: off)")
	f.BoolVar(&cfg.LeaderElection, "leader-elect", false, "elect a leader among replicas (use with more than one replica)")
	f.StringVar(&cfg.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's; kube-system in a WDS that is not the hosting cluster)")
	f.StringVar(&cfg.LeaderElectionID, "leader-election-id", aggregator.DefaultLeaderElectionID, "name of the leader election Lease (one per installation: two managers of two WDSes must not share it)")
	f.IntVar(&cfg.WebhookPort, "webhook-port", 9443, "port of the admission webhook server")
	f.StringVar(&cfg.CertDir, "webhook-cert-dir", "", "folder holding tls.crt and tls.key for the webhook server (default: controller-runtime's)")
	f.BoolVar(&o.webhooksOn, "webhooks", true, "serve the admission webhooks")
	f.StringVar(&o.certMode, "webhook-certs", "files",
		"files: tls.crt/tls.key in --webhook-cert-dir (cert-manager); builtin: statusfold's own CA, kept in a Secret and rotated")
	f.StringVar(&o.webhookSvc, "webhook-service", "statusfold-webhook-service", "the webhook Service's name (for builtin certificates)")
	f.StringVar(&o.certSecret, "webhook-cert-secret", certs.DefaultSecretName, "the Secret holding the built-in CA and serving certificate (for builtin certificates)")
	f.StringVar(&o.validatingCfg, "validating-webhook-configuration", webhooks.ValidatingConfigurationName, "the ValidatingWebhookConfiguration that gets the CA bundle (for builtin certificates)")
	f.StringVar(&o.mutatingCfg, "mutating-webhook-configuration", webhooks.MutatingConfigurationName, "the MutatingWebhookConfiguration that gets the CA bundle (for builtin certificates)")
	f.StringVar(&cfg.LuaHealthConfigMap, "lua-health-configmap", "",
		"namespace/name of a ConfigMap in the WDS in argocd-cm's format: its resource.customizations.health.<group>_<kind> Lua health checks apply before Argo CD's own (empty: Argo CD's only)")
	o.spaces.register(f)
	f.BoolVar(&cfg.WatchSecrets, "watch-secrets", false,
		"watch and cache Secrets (off: no Secret is ever watched or cached, and a BindingPolicy that selects Secrets gets ResourcesReadable=False)")
	f.IntVar(&cfg.SizeBudget, "size-budget", aggregator.DefaultSizeBudget,
		"largest encoded size in bytes of a CombinedStatus, or of a workload object with its returned status, that statusfold writes; over it the content is trimmed and says so (default: 1 MiB, for etcd's default 1.5 MiB request limit; lower it for an etcd with a lower --max-request-bytes)")
	f.StringVar(&o.webhookURL, "wds-webhook-url", "",
		"with --kubeflex and a WDS that is not the hosting cluster: the base URL the WDS calls the webhooks at (default https://<--webhook-service>.<--namespace>.svc:443); the built-in serving certificate is made valid for its host")
	f.BoolVar(&cfg.ClusterWideWatches, "cluster-wide-watches", false,
		"watch every workload resource cluster-wide (off: a resource that every BindingPolicy clause selecting it limits to named namespaces is watched in those namespaces only)")
	f.DurationVar(&cfg.WorkloadWatchTimeout, "workload-watch-timeout", aggregator.DefaultWorkloadWatchTimeout,
		"longest a workload resource's watch stays open before it is opened, and authorized, again: a read access revoked while statusfold runs shows within about this long; each informer opens a watch every 0.75 of it on average (at least 10s)")
	f.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "the namespace statusfold runs in (for builtin certificates; default $POD_NAMESPACE)")
	gofs := flag.NewFlagSet("log", flag.ContinueOnError)
	o.logConfig.AddFlags(gofs)
	f.AddGoFlagSet(gofs)
}

// run is the body of `statusfold manager`: it sets up logging and the Go runtime's memory and
// garbage collector settings, completes the Config from the flags and runs it with run.
func (o *managerOptions) run(ctx context.Context, run func(context.Context, aggregator.Config) error) error {
	ctrl.SetLogger(textlogger.NewLogger(o.logConfig))
	if err := o.tuneRuntime(); err != nil {
		return err
	}
	if err := o.completeConfig(); err != nil {
		return err
	}
	if o.spaces.kubeflex {
		return o.runWithSpaces(ctx, run)
	}
	return run(ctx, o.cfg)
}

// tuneRuntime applies --memory-limit, --gc-percent and --startup-gc-percent to the Go runtime and
// logs them; the Config's AfterFirstPass restores --gc-percent once the first pass is done.
func (o *managerOptions) tuneRuntime() error {
	if err := applyMemoryLimit(o.memoryLimit); err != nil {
		return err
	}
	p, source := aggregator.SetGCPercent(o.gcPercent)
	ctrl.Log.WithName("setup").Info("Go GC percent", "percent", p, "source", source)
	restore, lowered := aggregator.StartupGCPercent(o.startupGC)
	if lowered {
		ctrl.Log.WithName("setup").Info("Go GC percent until the first pass is done", "percent", o.startupGC)
	}
	o.cfg.AfterFirstPass = restore
	return nil
}

// completeConfig checks the flags that the Config does not take as they are and sets the Config
// fields they make: the collectors' time budget, pacing, the WDS's and the ITS's client configs,
// the binding resolution and the webhooks' setup.
func (o *managerOptions) completeConfig() error {
	cfg := &o.cfg
	if o.timeBudget <= 0 {
		return fmt.Errorf("--collector-time-budget %s: must be positive", o.timeBudget)
	}
	switch {
	case cfg.MaxWriteDelay < 0:
		return fmt.Errorf("--max-write-delay %s: must not be negative", cfg.MaxWriteDelay)
	case cfg.MaxWriteDelay == 0:
		cfg.MaxWriteDelay = aggregator.PacingOff
	}
	if cfg.SizeBudget < aggregator.MinSizeBudget {
		return fmt.Errorf("--size-budget %d: must be at least %d bytes", cfg.SizeBudget, aggregator.MinSizeBudget)
	}
	switch {
	case cfg.MaxReportedStatusBytes < 0:
		return fmt.Errorf("--max-reported-status-bytes %d: must not be negative", cfg.MaxReportedStatusBytes)
	case cfg.MaxReportedStatusBytes == 0:
		cfg.MaxReportedStatusBytes = aggregator.NoStatusCap
	}
	if cfg.ObjectTimeBudget <= 0 {
		return fmt.Errorf("--object-time-budget %s: must be positive", cfg.ObjectTimeBudget)
	}
	if cfg.WorkloadWatchTimeout < aggregator.MinWorkloadWatchTimeout {
		return fmt.Errorf("--workload-watch-timeout %s: must be at least %s", cfg.WorkloadWatchTimeout, aggregator.MinWorkloadWatchTimeout)
	}
	cfg.CompilerOptions = append(cfg.CompilerOptions, collector.WithTimeBudget(o.timeBudget))
	if !o.spaces.kubeflex || o.wdsKubeconfig != "" {
		wds, err := restConfig(o.wdsKubeconfig)
		if err != nil {
			return fmt.Errorf("--wds-kubeconfig: %w", err)
		}
		cfg.WDS = wds
	}
	if o.itsKubeconfig != "" {
		var err error
		if cfg.ITSConfig, err = restConfig(o.itsKubeconfig); err != nil {
			return fmt.Errorf("--its-kubeconfig: %w", err)
		}
	}
	cfg.BindingResolution = aggregator.BindingResolution(o.resolution)
	if o.webhooksOn {
		setup, err := o.webhookSetup()
		if err != nil {
			return err
		}
		cfg.SetupWebhooks = setup
	}
	return nil
}

// webhookSetup returns the function that sets the admission webhooks up on the manager, with
// certificate files (--webhook-certs files) or statusfold's own rotated ones (builtin).
func (o *managerOptions) webhookSetup() (func(manager.Manager) error, error) {
	wopts := webhooks.Options{}
	switch o.certMode {
	case "builtin":
		wopts.BuiltinCerts = o.builtinCerts("")
	case "files":
	default:
		return nil, fmt.Errorf("--webhook-certs %q: must be builtin or files", o.certMode)
	}
	return func(mgr manager.Manager) error { return webhooks.Setup(mgr, wopts) }, nil
}

// restConfig loads a kubeconfig file, or the default loading rules ($KUBECONFIG, in-cluster) for "".
// Like ctrl.GetConfig, a file that sets no QPS gets client-side rate limiting turned off (QPS -1:
// the apiserver's priority and fairness limits instead); client-go's default of 5 requests/s would
// throttle every write.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

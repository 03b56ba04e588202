package aggregator

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/statusfold/statusfold/api/scheme"
)

// Config is everything Run needs: the reconciler's Options plus the manager's process settings.
type Config struct {
	Options

	// WDS reaches the WDS. Required.
	WDS *rest.Config
	// MetricsAddr serves Prometheus metrics ("0" disables). ProbeAddr serves /healthz and /readyz
	// ("0" disables).
	MetricsAddr string
	ProbeAddr   string
	// PprofAddr serves the Go profiler's /debug/pprof/ endpoints ("" or "0": off).
	PprofAddr string
	// LeaderElection makes only one replica act at a time, using a Lease LeaderElectionID in
	// LeaderElectionNamespace (default: the in-cluster namespace) of the cluster
	// LeaderElectionConfig reaches (nil: the WDS; with KubeFlex, the hosting cluster, where the
	// pods and their namespace are).
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaderElectionConfig    *rest.Config
	// WebhookPort and CertDir configure the webhook server used by SetupWebhooks.
	WebhookPort int
	CertDir     string
	// SetupWebhooks, when set, registers the admission webhooks (and their certificates) with the
	// manager; nil runs no webhook server.
	SetupWebhooks func(manager.Manager) error
}

// DefaultLeaderElectionID is the Lease name replicas compete for.
const DefaultLeaderElectionID = "statusfold-manager.statusfold.dev"

// NewManager builds the controller-runtime manager described by cfg, with the reconciler (and the
// webhooks, if cfg.SetupWebhooks is set) added to it, and health checks.
func NewManager(cfg Config) (manager.Manager, *Aggregator, error) {
	if cfg.WDS == nil {
		return nil, nil, errors.New("aggregator: Config.WDS is required")
	}
	id := cfg.LeaderElectionID
	if id == "" {
		id = DefaultLeaderElectionID
	}
	mopts := ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.ProbeAddr,
		PprofBindAddress:        cfg.PprofAddr,
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        id,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		LeaderElectionConfig:    cfg.LeaderElectionConfig,
		// Stop acting at once when leadership is lost; the process restarts as a follower.
		LeaderElectionReleaseOnCancel: true,
	}
	if cfg.SetupWebhooks != nil {
		mopts.WebhookServer = webhook.NewServer(webhook.Options{Port: cfg.WebhookPort, CertDir: cfg.CertDir})
	}
	mgr, err := ctrl.NewManager(cfg.WDS, mopts)
	if err != nil {
		return nil, nil, fmt.Errorf("aggregator: manager: %w", err)
	}
	agg, err := Setup(mgr, cfg.Options)
	if err != nil {
		return nil, nil, err
	}
	if cfg.SetupWebhooks != nil {
		if err := cfg.SetupWebhooks(mgr); err != nil {
			return nil, nil, fmt.Errorf("aggregator: webhooks: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	ready := healthz.Ping
	if cfg.SetupWebhooks != nil {
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("ready", ready); err != nil {
		return nil, nil, err
	}
	return mgr, agg, nil
}

// Run builds the manager described by cfg and runs it until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	mgr, _, err := NewManager(cfg)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/kubeflex"
)

// spaceOptions are the flags that make `statusfold manager` find its WDS and ITS from KubeFlex
// ControlPlanes in the hosting cluster, as KubeStellar's controller-manager does
// (docs/install.md, "With KubeStellar's core chart").
type spaceOptions struct {
	kubeflex bool
	itsName  string
	recheck  time.Duration
	logEvery time.Duration
	// finder builds the lookup in the hosting cluster (tests replace it).
	finder func() (kubeflex.Finder, error)
}

func (s *spaceOptions) register(f *pflag.FlagSet) {
	f.BoolVar(&s.kubeflex, "kubeflex", false,
		"find the WDS (ControlPlane --wds-name) and the ITS (--its-name) from KubeFlex ControlPlanes in the hosting cluster ($KUBECONFIG, else in-cluster); --wds-kubeconfig and --its-kubeconfig still win")
	f.StringVar(&s.itsName, "its-name", "", "with --kubeflex: the ITS's ControlPlane (default: the only ControlPlane labelled kflex.kubestellar.io/cptype=its)")
	f.DurationVar(&s.recheck, "kubeflex-recheck-interval", 30*time.Second,
		"with --kubeflex: how often the kubeconfig Secrets are read again; when one changed the manager stops and exits 0, to be restarted with the new one")
	f.DurationVar(&s.logEvery, "kubeflex-wait-log-interval", 10*time.Second, "with --kubeflex: while a space is not ready, how often a line says what is missing")
	s.finder = hostingFinder
}

// hostingFinder looks ControlPlanes up in the cluster of the process's own kubeconfig
// ($KUBECONFIG, else the pod's ServiceAccount); inside a pod it reads the in-cluster kubeconfigs.
func hostingFinder() (kubeflex.Finder, error) {
	hosting, err := ctrl.GetConfig()
	if err != nil {
		return kubeflex.Finder{}, fmt.Errorf("--kubeflex: the hosting cluster: %w", err)
	}
	c, err := client.New(hosting, client.Options{})
	if err != nil {
		return kubeflex.Finder{}, fmt.Errorf("--kubeflex: the hosting cluster: %w", err)
	}
	_, inClusterErr := rest.InClusterConfig()
	return kubeflex.Finder{Client: c, Hosting: hosting, InCluster: inClusterErr == nil}, nil
}

// runWithSpaces finds the spaces that no kubeconfig flag names, waiting for them (the probe
// address answers /healthz and, not ready, /readyz meanwhile), then runs the manager until ctx
// ends or a kubeconfig in use changes; after a change it returns nil once the manager stopped.
func (o *managerOptions) runWithSpaces(ctx context.Context, run func(context.Context, aggregator.Config) error) error {
	log := ctrl.Log.WithName("kubeflex")
	f, err := o.spaces.finder()
	if err != nil {
		return err
	}
	probes, err := startWaitingProbes(o.cfg.ProbeAddr)
	if err != nil {
		return err
	}
	found, err := o.findSpaces(ctx, f, log, probes.report)
	if err == nil && o.admission != nil {
		err = o.registerInWDS(ctx, log, o.admission, probes.report)
	}
	probes.stop()
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan string, 1)
	go func() {
		msg := f.Changed(runCtx, log, o.spaces.recheck, found...)
		cancel()
		changed <- msg
	}()
	err = run(runCtx, o.cfg)
	cancel()
	if msg := <-changed; msg != "" {
		log.Info("a kubeconfig in use changed: the manager stopped and exits, to be restarted with the new one", "change", msg, "stopErr", err)
		return nil
	}
	return err
}

// findSpaces waits for the WDS and the ITS that no kubeconfig flag names and puts them into the
// Config; it returns the spaces found, whose Secrets are then watched.
func (o *managerOptions) findSpaces(ctx context.Context, f kubeflex.Finder, log logr.Logger, report func(string)) ([]kubeflex.Space, error) {
	wopts := kubeflex.WaitOptions{LogEvery: o.spaces.logEvery, Report: report}
	var found []kubeflex.Space
	var wds *kubeflex.Space
	if o.wdsKubeconfig == "" {
		s, err := f.Wait(ctx, log, kubeflex.TypeWDS, o.cfg.WDSName, wopts)
		if err != nil {
			return nil, fmt.Errorf("--kubeflex: the WDS %q: %w", o.cfg.WDSName, err)
		}
		found, wds = append(found, s), &s
		o.cfg.WDS = s.Config
	}
	if o.itsKubeconfig == "" {
		s, err := f.Wait(ctx, log, kubeflex.TypeITS, o.spaces.itsName, wopts)
		if err != nil {
			return nil, fmt.Errorf("--kubeflex: the ITS: %w", err)
		}
		found = append(found, s)
		// Both the hosting cluster: one set of clients and caches.
		if !(s.ControlPlane.IsHost() && wds != nil && wds.ControlPlane.IsHost()) {
			o.cfg.ITSConfig = s.Config
		}
	}
	if wds != nil && !wds.ControlPlane.IsHost() {
		o.separateWDS(log, wds.ControlPlane, f.Hosting)
	}
	return found, nil
}

// separateWDS adapts the Config to a WDS that is another apiserver than the hosting cluster: the
// Lease stays in the hosting cluster (hosting: its config), in the pod's namespace as without
// KubeFlex, where the chart's Role grants it; and the webhooks, served beside the pods, are
// registered in the WDS, where users apply their objects (registerInWDS; docs/install.md).
func (o *managerOptions) separateWDS(log logr.Logger, cp kubeflex.ControlPlane, hosting *rest.Config) {
	if o.cfg.LeaderElection {
		o.cfg.LeaderElectionConfig = hosting
		log.Info("the leader election Lease is kept in the hosting cluster", "controlPlane", cp.Name, "lease", o.cfg.LeaderElectionID)
	}
	if o.cfg.SetupWebhooks != nil {
		o.admission = &wdsAdmission{hosting: hosting}
		log.Info("admission webhooks are registered in the WDS, which is not the hosting cluster", "controlPlane", cp.Name, "type", cp.Type)
	}
}

// waitingProbes answers the probe address while the spaces are looked up: /healthz is ok (the
// process is alive, waiting), /readyz fails with what is missing.
type waitingProbes struct {
	srv     *http.Server
	mu      sync.Mutex
	missing string
}

func startWaitingProbes(addr string) (*waitingProbes, error) {
	p := &waitingProbes{missing: "looking up the spaces"}
	if addr == "" || addr == "0" {
		return p, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		http.Error(w, "waiting for a KubeFlex control plane: "+p.missing, http.StatusServiceUnavailable)
	})
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *waitingProbes) report(missing string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if missing != "" {
		p.missing = missing
	}
}

// stop closes the probe server, so that the manager can serve the address.
func (p *waitingProbes) stop() {
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = p.srv.Close()
	}
}

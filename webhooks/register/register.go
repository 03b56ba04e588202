// Package register keeps statusfold's admission registered in a WDS that is another apiserver
// than the cluster the manager's pods run in (a KubeFlex ControlPlane of type k8s or vcluster):
// it installs the CRDs of statusfold's own kinds that KubeStellar does not install there, and
// creates and updates statusfold's validating and mutating webhook configurations in the WDS,
// pointing at the webhook server by URL (docs/install.md, "With KubeStellar's core chart").
//
// The configurations are webhooks.Configurations (the same as config/webhook and the chart's;
// tests keep the three in step) with a URL client config; their caBundle is left to the
// built-in certificates' rotator (package certs), or, with cert-manager, set from a bundle
// source (the CA of the Secret cert-manager writes in the hosting cluster).
//
// Nothing is registered in a cluster that does not serve the StatusCollector kind: a webhook
// there would name kinds nobody applies, and its failurePolicy Fail would stand in the way of
// the kinds' later installation by KubeStellar. The Registrar says so (log line, metric
// statusfold_wds_webhooks_registered 0) and tries again.
package register

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/webhooks"
)

// FieldOwner is the field manager of what the Registrar applies.
const FieldOwner = "statusfold-register"

// DefaultInterval is how often Start makes sure the registration still stands.
const DefaultInterval = 10 * time.Second

// ErrNotServed is Sync's error when the cluster does not serve the StatusCollector kind.
var ErrNotServed = errors.New("the StatusCollector kind (statuscollectors.control.kubestellar.io) is not served: statusfold's webhooks and CRDs are not registered")

// Options configures a Registrar.
type Options struct {
	// BaseURL is where the cluster reaches the webhook server: each webhook's client config is
	// BaseURL + its path.
	BaseURL string
	// ValidatingName and MutatingName name the configurations (default: webhooks' names).
	ValidatingName, MutatingName string
	// CABundle, when set, gives the CA bundle to set in every webhook (cert-manager mode). Nil
	// leaves the caBundle as found: the built-in certificates' rotator injects it.
	CABundle func(context.Context) ([]byte, error)
	// Interval is how often Start syncs (default DefaultInterval).
	Interval time.Duration
}

// Registrar registers statusfold's admission in one cluster (the WDS). It is a leader-elected
// manager.Runnable; Sync and WaitServed may be called before the manager starts.
type Registrar struct {
	c    client.Client
	disc discovery.DiscoveryInterface
	opts Options
	log  logr.Logger
}

// New returns a Registrar writing with c (a client that reads from the apiserver, not a cache)
// and asking disc whether the StatusCollector kind is served.
func New(c client.Client, disc discovery.DiscoveryInterface, log logr.Logger, opts Options) (*Registrar, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("register: BaseURL required")
	}
	if opts.ValidatingName == "" {
		opts.ValidatingName = webhooks.ValidatingConfigurationName
	}
	if opts.MutatingName == "" {
		opts.MutatingName = webhooks.MutatingConfigurationName
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Registrar{c: c, disc: disc, opts: opts, log: log}, nil
}

// Served reports whether the cluster serves the StatusCollector kind.
func (r *Registrar) Served() (bool, error) {
	list, err := r.disc.ServerResourcesForGroupVersion(controlv1alpha1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("register: discovery of %s: %w", controlv1alpha1.GroupVersion, err)
	}
	for _, res := range list.APIResources {
		if res.Name == controlv1alpha1.ResourceStatusCollectors {
			return true, nil
		}
	}
	return false, nil
}

// Sync installs or updates statusfold's own CRDs and its webhook configurations, when the
// StatusCollector kind is served (else ErrNotServed, and nothing is written).
func (r *Registrar) Sync(ctx context.Context) error {
	served, err := r.Served()
	if err != nil {
		return err
	}
	if !served {
		return ErrNotServed
	}
	if err := EnsureCRDs(ctx, r.c); err != nil {
		return err
	}
	var bundle []byte
	if r.opts.CABundle != nil {
		if bundle, err = r.opts.CABundle(ctx); err != nil {
			return fmt.Errorf("register: the CA bundle: %w", err)
		}
	}
	v, m := webhooks.Configurations(webhooks.URLClientConfig(r.opts.BaseURL, bundle))
	v.Name, m.Name = r.opts.ValidatingName, r.opts.MutatingName
	return errors.Join(apply(ctx, r.c, v), apply(ctx, r.c, m))
}

// WaitServed syncs until the kind is served and the sync succeeds, with a log line (and
// report, when set) every logEvery while it waits; it returns ctx's error when ctx ends first.
func (r *Registrar) WaitServed(ctx context.Context, logEvery time.Duration, report func(string)) error {
	var last time.Time
	for {
		err := r.Sync(ctx)
		registered.Set(boolGauge(err == nil))
		if err == nil {
			r.log.Info("admission registered in the WDS", "url", r.opts.BaseURL,
				"validating", r.opts.ValidatingName, "mutating", r.opts.MutatingName)
			return nil
		}
		if time.Since(last) >= logEvery {
			r.log.Info("waiting to register admission in the WDS", "reason", err.Error())
			if report != nil {
				report(err.Error())
			}
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Start syncs every Interval until ctx ends (a deleted configuration comes back, a changed one
// is set back); failures are logged and retried.
func (r *Registrar) Start(ctx context.Context) error {
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			err := r.Sync(ctx)
			registered.Set(boolGauge(err == nil))
			if err != nil {
				r.log.Error(err, "registering admission in the WDS")
			}
		}
	}
}

// apply server-side applies obj with FieldOwner (forcing ownership of the fields it sets).
// Fields obj leaves out stay as they are: a webhook's caBundle, which the certificates' rotator
// writes, when obj sets none. An apply that changes nothing writes nothing.
func apply(ctx context.Context, c client.Client, obj runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// registered is statusfold_wds_webhooks_registered: 1 while the last sync succeeded.
var registered = func() prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "statusfold_wds_webhooks_registered",
		Help: "1 when statusfold's CRDs and webhook configurations are registered in a WDS that is another apiserver (the last sync succeeded); 0 while waiting (the StatusCollector kind not served) or failing."})
	ctrlmetrics.Registry.MustRegister(g)
	return g
}()

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

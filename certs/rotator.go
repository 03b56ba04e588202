package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The Secret lives in the manager's namespace: a namespaced Role, get/update by name (create
// cannot be restricted by name). Only our two webhook configurations can be read and updated.
// +kubebuilder:rbac:groups="",namespace=statusfold-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=statusfold-system,resources=secrets,verbs=get;update,resourceNames=statusfold-webhook-server-cert
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;update,resourceNames=statusfold-validating-webhook-configuration;statusfold-mutating-webhook-configuration

// Rotator keeps the webhook server's certificate valid. It is a manager.Runnable that runs on
// every replica (not only the leader).
type Rotator struct {
	opts Options
	c    client.Client

	serving atomic.Pointer[tls.Certificate]

	mu     sync.Mutex // serializes checks
	ca     *keyPair   // current CA (memory mode keeps it here)
	bundle []byte
	servKP *keyPair
}

var (
	_ manager.Runnable               = (*Rotator)(nil)
	_ manager.LeaderElectionRunnable = (*Rotator)(nil)
)

// New checks the certificates once (creating or renewing them as needed, injecting the CA
// bundle) and returns a Rotator whose GetCertificate serves the result. c must read directly
// from the apiserver (not a cache that has not started).
func New(ctx context.Context, c client.Client, opts Options) (*Rotator, error) {
	if len(opts.DNSNames) == 0 && len(opts.IPAddresses) == 0 {
		return nil, errors.New("certs: DNSNames or IPAddresses required")
	}
	opts = withDefaults(opts)
	r := &Rotator{opts: opts, c: c}
	if err := r.checkRetrying(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// checkRetrying is Check, retried at once (client-go's retry.DefaultRetry: 5 attempts ~10 ms
// apart) when another replica wrote the Secret first: the next attempt reads what it wrote.
func (r *Rotator) checkRetrying(ctx context.Context) error {
	lostRace := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return retry.OnError(retry.DefaultRetry, lostRace, func() error { return r.Check(ctx) })
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.serving.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("certs: no serving certificate yet")
}

// TLSOption sets GetCertificate on the webhook server's TLS config
// (webhook.Options.TLSOpts), so that rotated certificates are used without a restart.
func (r *Rotator) TLSOption() func(*tls.Config) {
	return func(c *tls.Config) { c.GetCertificate = r.GetCertificate }
}

// CABundle returns the PEM CA bundle that clients of the webhook server must trust.
func (r *Rotator) CABundle() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.bundle)
}

// NeedLeaderElection is false: every replica serves webhooks and needs a certificate.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start re-checks every CheckInterval, and re-injects the CA bundle into configurations that
// lost it (re-created, replaced) every InjectInterval, until ctx ends: merged with the Secret's
// and the configurations' CAs, so that a replica that has not seen a CA rotation yet does not
// take the new CA out again. Failures are logged and retried.
func (r *Rotator) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("cert-rotator")
	check := time.NewTicker(r.opts.CheckInterval)
	defer check.Stop()
	inject := time.NewTicker(r.opts.InjectInterval)
	defer inject.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-check.C:
			if err := r.checkRetrying(ctx); err != nil {
				logger.Error(err, "checking webhook certificates")
			}
		case <-inject.C:
			if err := r.inject(ctx, r.CABundle()); err != nil {
				logger.Error(err, "injecting the CA bundle")
			}
		}
	}
}

// Check renews what is due, stores it, injects the CA bundle and switches the served
// certificate.
func (r *Rotator) Check(ctx context.Context) error {
	return r.check(ctx, false, false)
}

// Rotate renews the serving certificate now, and the CA too when ca is true (for tests and
// operators who suspect a key leaked).
func (r *Rotator) Rotate(ctx context.Context, ca bool) error {
	return r.check(ctx, true, ca)
}

// check renews what is due (the serving certificate in any case with force, the CA too with
// forceCA), stores it, injects the CA bundle and switches the served certificate.
func (r *Rotator) check(ctx context.Context, force, forceCA bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()

	secret, ca, bundleCerts, serving, err := r.load(ctx)
	if err != nil {
		return err
	}
	changed, caChanged := false, false
	if ca == nil || forceCA || due(ca.cert, now) {
		next, err := newCA(now, r.opts.CAValidity)
		if err != nil {
			return err
		}
		bundleCerts = append([]*x509.Certificate{next.cert}, bundleCerts...)
		ca, changed, caChanged = next, true, true
	}
	if serving == nil || force || caChanged || due(serving.cert, now) || !servingFits(serving, ca, r.opts.DNSNames, r.opts.IPAddresses) {
		if serving, err = newServing(ca, r.opts.DNSNames, r.opts.IPAddresses, now, r.opts.CertValidity); err != nil {
			return err
		}
		changed = true
	}
	bundle := bundleOf(now, bundleCerts...)
	if secret != nil && !bytes.Equal(secret.Data[KeyCACert], bundle) {
		changed = true // an expired CA left the bundle
	}
	if changed {
		if err := r.store(ctx, secret, ca, bundle, serving); err != nil {
			return err
		}
	}
	r.ca, r.bundle = ca, bundle
	if err := r.inject(ctx, bundle); err != nil {
		return err
	}
	return r.serve(ctx, serving, caChanged)
}

// serve makes serving the served certificate, and writes it to CertDir, unless it is served
// already. When the CA changed and another certificate was served, it first waits
// BundlePropagationDelay.
func (r *Rotator) serve(ctx context.Context, serving *keyPair, caChanged bool) error {
	cur := r.serving.Load()
	if cur != nil && bytes.Equal(cur.Certificate[0], serving.cert.Raw) {
		return nil
	}
	if caChanged && cur != nil {
		// Let the apiserver see the new bundle before it meets a certificate it signed.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.opts.BundlePropagationDelay):
		}
	}
	tc, err := tlsCertificate(serving)
	if err != nil {
		return err
	}
	r.serving.Store(tc)
	r.servKP = serving
	return r.writeFiles(serving)
}

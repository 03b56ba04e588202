package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Keys of the Secret (type kubernetes.io/tls).
const (
	KeyCACert = "ca.crt" // the CA bundle: the current CA, then older CAs not yet expired
	KeyCAKey  = "ca.key"
	KeyCert   = corev1.TLSCertKey
	KeyKey    = corev1.TLSPrivateKeyKey
)

// Defaults of Options.
const (
	DefaultSecretName             = "statusfold-webhook-server-cert"
	DefaultCAValidity             = 2 * 365 * 24 * time.Hour
	DefaultCertValidity           = 90 * 24 * time.Hour
	DefaultCheckInterval          = 10 * time.Minute
	DefaultBundlePropagationDelay = 5 * time.Second
	DefaultInjectInterval         = 10 * time.Second
)

// Options configures a Rotator.
type Options struct {
	// Namespace of the Secret that stores the CA and the serving certificate. Empty keeps them
	// in memory only (local mode, tests).
	Namespace string
	// SecretName defaults to DefaultSecretName.
	SecretName string
	// DNSNames and IPAddresses are the serving certificate's names; at least one is required.
	DNSNames    []string
	IPAddresses []net.IP
	// ValidatingWebhookConfigurations and MutatingWebhookConfigurations name the configurations
	// whose webhooks get the CA bundle. A configuration that does not exist yet is retried at
	// each check.
	ValidatingWebhookConfigurations []string
	MutatingWebhookConfigurations   []string
	// CAValidity and CertValidity default to DefaultCAValidity and DefaultCertValidity.
	CAValidity, CertValidity time.Duration
	// CheckInterval is how often Start re-checks (default DefaultCheckInterval, and never more
	// than a tenth of CertValidity).
	CheckInterval time.Duration
	// InjectInterval is how often Start makes sure the configurations still carry the bundle
	// (two reads; an update only when one was re-created or re-applied without it); default
	// DefaultInjectInterval.
	InjectInterval time.Duration
	// BundlePropagationDelay is how long a CA rotation waits between injecting the new bundle
	// and serving the certificate it signed (default DefaultBundlePropagationDelay).
	BundlePropagationDelay time.Duration
	// CertDir, if set, also gets tls.crt and tls.key (for tools that read files).
	CertDir string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ServiceDNSNames are the names under which a Service is reached in-cluster.
func ServiceDNSNames(service, namespace string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

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
	if opts.SecretName == "" {
		opts.SecretName = DefaultSecretName
	}
	if opts.CAValidity == 0 {
		opts.CAValidity = DefaultCAValidity
	}
	if opts.CertValidity == 0 {
		opts.CertValidity = DefaultCertValidity
	}
	if opts.CheckInterval == 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.CheckInterval > opts.CertValidity/10 {
		opts.CheckInterval = opts.CertValidity / 10
	}
	if opts.InjectInterval == 0 {
		opts.InjectInterval = DefaultInjectInterval
	}
	if opts.BundlePropagationDelay == 0 {
		opts.BundlePropagationDelay = DefaultBundlePropagationDelay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
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
// lost it (re-created, replaced) every InjectInterval, until ctx ends. Failures are logged and
// retried.
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
	cur := r.serving.Load()
	if cur == nil || !bytes.Equal(cur.Certificate[0], serving.cert.Raw) {
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
		if err := r.writeFiles(serving); err != nil {
			return err
		}
	}
	return nil
}

// load reads the stored material; parts that are missing or do not parse come back nil.
func (r *Rotator) load(ctx context.Context) (secret *corev1.Secret, ca *keyPair, bundle []*x509.Certificate, serving *keyPair, err error) {
	if r.opts.Namespace == "" {
		return nil, r.ca, mustParse(r.bundle), r.servKP, nil
	}
	secret = &corev1.Secret{}
	err = r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.SecretName}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("certs: reading Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
	}
	if kp, err := parseKeyPair(secret.Data[KeyCACert], secret.Data[KeyCAKey]); err == nil {
		ca, bundle = kp, mustParse(secret.Data[KeyCACert])
	}
	if kp, err := parseKeyPair(secret.Data[KeyCert], secret.Data[KeyKey]); err == nil {
		serving = kp
	}
	return secret, ca, bundle, serving, nil
}

// mustParse returns the certificates of a bundle, or none when it does not parse.
func mustParse(bundle []byte) []*x509.Certificate {
	certs, err := parseCerts(bundle)
	if err != nil {
		return nil
	}
	return certs
}

// store writes the material to the Secret (in memory mode, nothing to do).
func (r *Rotator) store(ctx context.Context, secret *corev1.Secret, ca *keyPair, bundle []byte, serving *keyPair) error {
	if r.opts.Namespace == "" {
		return nil
	}
	data := map[string][]byte{KeyCACert: bundle, KeyCAKey: ca.keyPEM, KeyCert: serving.certPEM, KeyKey: serving.keyPEM}
	if secret == nil {
		return r.c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: r.opts.SecretName,
				Labels: map[string]string{"app.kubernetes.io/name": "statusfold", "app.kubernetes.io/component": "webhook"}},
			Type: corev1.SecretTypeTLS,
			Data: data,
		})
	}
	secret.Data = data
	return r.c.Update(ctx, secret) // a Conflict means another replica rotated: checkRetrying reads it
}

// inject puts bundle into every webhook of the named configurations.
func (r *Rotator) inject(ctx context.Context, bundle []byte) error {
	var errs []error
	for _, t := range []struct {
		kind  string
		names []string
	}{
		{"ValidatingWebhookConfiguration", r.opts.ValidatingWebhookConfigurations},
		{"MutatingWebhookConfiguration", r.opts.MutatingWebhookConfigurations},
	} {
		for _, name := range t.names {
			errs = append(errs, r.injectInto(ctx, t.kind, name, bundle))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("certs: injecting the CA bundle: %w", err)
	}
	return nil
}

// injectInto sets bundle as the caBundle of every webhook of one configuration, updating it
// when something changed; an update that lost a race with another writer (another replica,
// kubectl apply) is redone on a fresh read (retry.RetryOnConflict). A missing configuration is
// not an error: it gets the bundle at a later check.
func (r *Rotator) injectInto(ctx context.Context, kind, name string, bundle []byte) error {
	encoded := base64.StdEncoding.EncodeToString(bundle)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
		if err := r.c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return client.IgnoreNotFound(err)
		}
		webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
		if err != nil {
			return err
		}
		changed := false
		for _, w := range webhooks {
			wm, ok := w.(map[string]any)
			if !ok {
				continue
			}
			cc, _ := wm["clientConfig"].(map[string]any)
			if cc == nil {
				cc = map[string]any{}
				wm["clientConfig"] = cc
			}
			if cc["caBundle"] != encoded {
				cc["caBundle"], changed = encoded, true
			}
		}
		if !changed {
			return nil
		}
		if err := unstructured.SetNestedSlice(u.Object, webhooks, "webhooks"); err != nil {
			return err
		}
		return r.c.Update(ctx, u)
	})
}

func (r *Rotator) writeFiles(serving *keyPair) error {
	if r.opts.CertDir == "" {
		return nil
	}
	if err := os.MkdirAll(r.opts.CertDir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{KeyCert: serving.certPEM, KeyKey: serving.keyPEM} {
		tmp := filepath.Join(r.opts.CertDir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(r.opts.CertDir, name)); err != nil {
			return err
		}
	}
	return nil
}

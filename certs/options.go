package certs

import (
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
	// ConfigurationsClient, when set, reaches the cluster holding those configurations, when it
	// is not the Secret's (a WDS that is another apiserver than the manager's hosting cluster);
	// nil: the client given to New. It must read from the apiserver, not a cache.
	ConfigurationsClient client.Client
	// CAValidity and CertValidity default to DefaultCAValidity and DefaultCertValidity.
	CAValidity, CertValidity time.Duration
	// CheckInterval is how often Start re-checks (default DefaultCheckInterval, and never more
	// than a tenth of CertValidity).
	CheckInterval time.Duration
	// InjectInterval is how often Start makes sure the configurations still carry the bundle
	// (reads of the Secret and the configurations; an update only when the merge of their CAs
	// and this replica's differs from what a configuration holds, see inject); default
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

// withDefaults is opts with every zero field that has a default set to it, and CheckInterval
// capped at a tenth of CertValidity.
func withDefaults(opts Options) Options {
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
	return opts
}

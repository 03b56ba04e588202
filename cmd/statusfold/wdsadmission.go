package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/webhooks"
	"github.com/statusfold/statusfold/webhooks/register"
)

// wdsAdmission is admission in a WDS that is another apiserver than the hosting cluster, where
// the manager's pods, its webhook Service and its certificates' Secret are
// (docs/install.md, "With KubeStellar's core chart"): the webhook configurations and
// statusfold's own CRDs are registered in the WDS, calling the webhook server by URL.
type wdsAdmission struct {
	hosting *rest.Config
}

// webhookBaseURL is --wds-webhook-url, by default the webhook Service's cluster DNS name in the
// hosting cluster, port 443.
func (o *managerOptions) webhookBaseURL() (*url.URL, error) {
	raw := o.webhookURL
	if raw == "" {
		if o.namespace == "" {
			return nil, fmt.Errorf("admission in the WDS: --namespace (or $POD_NAMESPACE) or --wds-webhook-url is required")
		}
		raw = fmt.Sprintf("https://%s.%s.svc:443", o.webhookSvc, o.namespace)
	}
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("--wds-webhook-url %q: must be https://HOST[:PORT][/PATH], no query, fragment or user", raw)
	}
	return u, nil
}

// registerInWDS waits until the WDS serves the StatusCollector kind, then registers statusfold's
// CRDs and webhook configurations there (report tells the waiting probes why it waits), and
// makes the Config's webhook setup keep them registered, with certificates valid for the URL's
// host whose CA bundle reaches the WDS.
func (o *managerOptions) registerInWDS(ctx context.Context, log logr.Logger, a *wdsAdmission, report func(string)) error {
	base, err := o.webhookBaseURL()
	if err != nil {
		return err
	}
	wdsClient, err := client.New(o.cfg.WDS, client.Options{})
	if err != nil {
		return fmt.Errorf("admission in the WDS: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(o.cfg.WDS)
	if err != nil {
		return fmt.Errorf("admission in the WDS: %w", err)
	}
	ropts := register.Options{BaseURL: base.String(), ValidatingName: o.validatingCfg, MutatingName: o.mutatingCfg}
	if o.certMode != "builtin" {
		// cert-manager writes the CA beside the serving certificate, in the hosting cluster.
		if ropts.CABundle, err = o.hostingCABundle(a.hosting); err != nil {
			return err
		}
	}
	reg, err := register.New(wdsClient, disc, log.WithName("register"), ropts)
	if err != nil {
		return err
	}
	if err := reg.WaitServed(ctx, o.spaces.logEvery, report); err != nil {
		return fmt.Errorf("admission in the WDS: %w", err)
	}
	wopts := webhooks.Options{}
	if o.certMode == "builtin" {
		wopts.BuiltinCerts = o.builtinCerts(base.Hostname())
		wopts.BuiltinCertsCluster = a.hosting
	}
	o.cfg.SetupWebhooks = func(mgr manager.Manager) error {
		if err := webhooks.Setup(mgr, wopts); err != nil {
			return err
		}
		return mgr.Add(reg)
	}
	return nil
}

// builtinCerts are the built-in certificates' options: the Secret in --namespace, valid for the
// webhook Service's names and, when not one of them, host (the webhook URL's).
func (o *managerOptions) builtinCerts(host string) *certs.Options {
	opts := &certs.Options{Namespace: o.namespace, CertDir: o.cfg.CertDir, SecretName: o.certSecret,
		DNSNames:                        certs.ServiceDNSNames(o.webhookSvc, o.namespace),
		ValidatingWebhookConfigurations: []string{o.validatingCfg},
		MutatingWebhookConfigurations:   []string{o.mutatingCfg}}
	if host == "" {
		return opts
	}
	if ip := net.ParseIP(host); ip != nil {
		opts.IPAddresses = append(opts.IPAddresses, ip)
		return opts
	}
	for _, n := range opts.DNSNames {
		if n == host {
			return opts
		}
	}
	opts.DNSNames = append(opts.DNSNames, host)
	return opts
}

// hostingCABundle reads the CA bundle (ca.crt) of the serving certificate's Secret
// (--webhook-cert-secret in --namespace) in the hosting cluster, which cert-manager writes.
func (o *managerOptions) hostingCABundle(hosting *rest.Config) (func(context.Context) ([]byte, error), error) {
	if o.namespace == "" {
		return nil, fmt.Errorf("admission in the WDS with cert-manager: --namespace (or $POD_NAMESPACE) is required")
	}
	c, err := client.New(hosting, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("admission in the WDS: the hosting cluster: %w", err)
	}
	key := client.ObjectKey{Namespace: o.namespace, Name: o.certSecret}
	return func(ctx context.Context) ([]byte, error) {
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err != nil {
			return nil, fmt.Errorf("Secret %s in the hosting cluster: %w", key, err)
		}
		if len(s.Data[certs.KeyCACert]) == 0 {
			return nil, fmt.Errorf("Secret %s in the hosting cluster has no %s yet", key, certs.KeyCACert)
		}
		return s.Data[certs.KeyCACert], nil
	}, nil
}

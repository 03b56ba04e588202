// Package certs provides the webhook server's TLS certificates when cert-manager is not used:
// a self-signed CA and a serving certificate, stored in a Secret, with the CA bundle injected
// into statusfold's webhook configurations, rotated well before expiry, and hot-reloaded into
// the running webhook server (no restart).
//
// Wiring, in cmd/ (statusfold manager), before the manager is built:
//
//	rot, err := certs.New(ctx, uncachedClient, certs.Options{
//		Namespace:  "statusfold-system",                   // where the Secret lives ("" = memory only)
//		DNSNames:   certs.ServiceDNSNames("statusfold-webhook-service", "statusfold-system"),
//		ValidatingWebhookConfigurations: []string{"statusfold-validating-webhook-configuration"},
//		MutatingWebhookConfigurations:   []string{"statusfold-mutating-webhook-configuration"},
//	})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{WebhookServer: webhook.NewServer(webhook.Options{
//		Port: 9443, TLSOpts: []func(*tls.Config){rot.TLSOption()}})})
//	err = mgr.Add(rot) // re-checks every CheckInterval, re-injects every InjectInterval; every replica
//
// New does the first check synchronously, so the server has a certificate from its first
// handshake. In local mode (the apiserver calls the webhook by URL on 127.0.0.1) use
// IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}, and an empty
// Namespace to keep the material in memory.
//
// Rotation: the serving certificate is renewed when less than a third of its validity is left
// (defaults: 90 days validity, so after 60), or when its names change or it is not signed by
// the current CA. The CA (default 2 years) is renewed the same way; the old CA stays in the
// bundle until it expires, the new bundle is injected before the new serving certificate is
// used, and the switch waits BundlePropagationDelay so that the apiserver has seen the bundle.
// With several replicas, all read and write the same Secret; each picks up the others'
// rotations at its next check.
//
// The other path, for clusters with cert-manager, is config/certmanager (Issuer, Certificate,
// cert-manager.io/inject-ca-from); there the webhook server reads the mounted Secret from its
// CertDir and controller-runtime's certificate watcher hot-reloads it.
package certs

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
// rotations at its next check. Until then a replica's injections never remove a CA: the
// bundle written to a configuration is the union of the Secret's CAs, the configuration's and
// the replica's own, expired ones left out, in an order that depends only on that set (latest
// NotAfter first, then SHA-256 fingerprint), so replicas converge on the same bytes and a
// configuration is updated only when that union changes.
//
// # What comes from libraries, and what is hand-written, and why
//
// Keys, signing, PEM encoding and decoding (with cert-manager's bounds on what a Secret may
// hold), the renewal time (a third of the lifetime before expiry, cert-manager's default) and
// the SAN comparison come from cert-manager's pkg/util/pki, the same rules cert-manager applies
// in the cert-manager mode. Conflicts with other replicas are retried with client-go's
// retry.OnError / retry.RetryOnConflict.
//
// The rotation itself (Rotator) stays hand-written. open-policy-agent/cert-controller's
// rotator (v0.16.0, Gatekeeper's; it builds with our Kubernetes v0.37.2) was evaluated against
// what this package must do, and does not serve:
//   - no CA overlap: when the CA is renewed it writes the new CA and the certificate it signed
//     at once and injects a bundle holding only the new CA, so until every apiserver and every
//     replica have both, some admissions fail; here the old CA stays in the bundle until it
//     expires and the new certificate is served only BundlePropagationDelay after the new
//     bundle was injected (test/integration/admission rotates under load with 0 failures);
//   - no hot reload in process: it writes files and relies on the Secret volume being synced
//     by the kubelet (up to a minute or more) and on controller-runtime's certificate watcher;
//     here GetCertificate switches at once, and CertDir is optional;
//   - DNS names only, no IP SANs: local mode, where the apiserver calls https://127.0.0.1,
//     cannot use it;
//   - it needs the Secret to exist beforehand and list/watch on Secrets and on webhook
//     configurations through a cache, where this package needs get/update on two named
//     configurations and one named Secret (RBAC markers in rotator.go), and it generates
//     RSA-2048 keys where we use P-256 as the cert-manager mode does.
//
// The other path, for clusters with cert-manager, is config/certmanager (Issuer, Certificate,
// cert-manager.io/inject-ca-from); there the webhook server reads the mounted Secret from its
// CertDir and controller-runtime's certificate watcher hot-reloads it.
package certs

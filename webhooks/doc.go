// Package webhooks serves statusfold's admission webhooks (docs/rules.md "Admission") from a controller-runtime
// manager: validating webhooks for StatusCollector, ContentClassifier and BindingPolicy (and the
// aggregation-policy kind), and a defaulting webhook that sets a StatusCollector's `spec.limit`
// to 20 when it is 0 or omitted. The checks themselves live in package webhooks/check, which
// `statusfold validate` shares.
//
// Wiring, in cmd/ (statusfold manager):
//
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(),
//		WebhookServer: webhook.NewServer(webhook.Options{Port: 9443, CertDir: dir})})
//	err := webhooks.Setup(mgr, webhooks.Options{})
//
// Setup needs nothing but the manager: StatusCollectors are read live (RBAC: get
// statuscollectors), BindingPolicies through the manager's cache (get, list, watch), resources are mapped with the
// manager's REST mapper, and OpenAPI schemas for the schema-aware warnings come from the
// apiserver's /openapi/v3 discovery (reused until the apiserver publishes a changed document). The manager's webhook server
// must have a serving certificate: from cert-manager (config/certmanager), or from package certs
// (built-in CA and rotation). The webhook configurations are in config/webhook; the paths are
// the constants below.
//
// Update requests whose spec did not change are admitted even if the object is invalid (an
// object that got in while the webhook was away can still be relabelled or have finalizers
// removed); its errors are then reported in its status by the controller.
package webhooks

// Package admission holds the envtest integration tests of statusfold's admission webhooks: a
// real kube-apiserver calls the webhook server of an in-process controller-runtime manager over
// TLS, with certificates from the built-in rotator (package certs).
package admission

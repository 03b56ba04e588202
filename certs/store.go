package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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

// writeFiles writes the serving certificate and key to CertDir as tls.crt and tls.key, each
// through a temporary file renamed into place (nothing to do without CertDir).
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

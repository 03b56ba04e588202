package wdsadmission

import (
	"bytes"
	"context"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestAdmissionInSeparateWDSCertManager: with certificates from files (cert-manager's mode: it
// writes the serving certificate, mounted in the pod, and its CA as ca.crt of the Secret in the
// hosting cluster), the manager sets that ca.crt as the caBundle of the WDS's configurations,
// follows a change of it, and the WDS's apiserver calls the webhooks with it.
func TestAdmissionInSeparateWDSCertManager(t *testing.T) {
	hosting, wds := startSpaces(t)
	installKubeStellarCRDs(t, wds)
	certDir := t.TempDir()
	chain, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, ca := splitPEM(t, chain)
	for name, data := range map[string][]byte{certs.KeyCert: serving, certs.KeyKey: key} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "statusfold-system", Name: certs.DefaultSecretName},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{certs.KeyCACert: ca, certs.KeyCert: serving, certs.KeyKey: key}}
	create(t, hosting.Client, secret)

	port := strconv.Itoa(framework.FreePort(t))
	p := startManager(t, hosting.Kubeconfig, "--kubeflex", "--wds-name=wds1", "--its-name=its1",
		"--namespace=statusfold-system", "--webhook-certs=files", "--webhook-port="+port, "--wds-webhook-url=https://127.0.0.1:"+port,
		"--webhook-cert-dir="+certDir, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	p.waitLog(t, "admission registered in the WDS", time.Minute)
	waitBundle(t, wds.Client, ca)
	assertAdmission(t, wds)

	// cert-manager renews the CA: the WDS's configurations follow the Secret.
	next := newCAPEM(t)
	secret.Data[certs.KeyCACert] = append(append([]byte{}, ca...), next...)
	if err := hosting.Client.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, wds.Client, secret.Data[certs.KeyCACert])
}

// waitBundle waits until every webhook of the WDS's two configurations has the caBundle want.
func waitBundle(t *testing.T, wds client.Client, want []byte) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "the Secret's ca.crt in the WDS's configurations", time.Minute, func() (bool, string) {
		v, m := &admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := wds.Get(ctx, client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, v); err != nil {
			return false, err.Error()
		}
		if err := wds.Get(ctx, client.ObjectKey{Name: webhooks.MutatingConfigurationName}, m); err != nil {
			return false, err.Error()
		}
		bundles := [][]byte{m.Webhooks[0].ClientConfig.CABundle}
		for _, w := range v.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, b := range bundles {
			if !bytes.Equal(b, want) {
				return false, "caBundle differs"
			}
		}
		return true, ""
	})
}

// splitPEM splits a serving certificate followed by its CA.
func splitPEM(t *testing.T, chain []byte) (first, rest []byte) {
	t.Helper()
	block, rest := pem.Decode(chain)
	if block == nil || len(bytes.TrimSpace(rest)) == 0 {
		t.Fatal("want a certificate followed by its CA")
	}
	return pem.EncodeToMemory(block), rest
}

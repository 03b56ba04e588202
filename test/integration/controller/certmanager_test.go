package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	b64 "encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestChartCertManagerMode installs the chart with certificates.mode=cert-manager into an
// apiserver that has cert-manager's CRDs (from the cert-manager Go module), so the Issuer and
// Certificate are validated by cert-manager's own schemas. cert-manager's controllers do not
// run in this test's control plane, so the test does their part from the objects the chart made:
// it issues the Certificate's Secret (CA, certificate for its dnsNames) and, as cainjector does
// for the cert-manager.io/inject-ca-from annotation, puts the CA into every webhook's caBundle. The
// manager then runs as the chart's ServiceAccount with --webhook-certs=files reading the
// Secret's files (as the pod mounts them), and the apiserver's webhook calls succeed over TLS;
// the scenario runs with no refused request.
func TestChartCertManagerMode(t *testing.T) {
	cmCRDs := certManagerCRDs(t)
	cp := framework.RunControlPlane(t, framework.WithoutCRDs(), framework.WithExtraCRDs(cmCRDs...),
		framework.WithAPIServerFlag("enable-aggregator-routing", "true"))
	installChart(t, cp, "--set", "certificates.mode=cert-manager")
	c := cp.Client
	ctx := context.Background()

	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "statusfold-serving-cert"}, cert); err != nil {
		t.Fatalf("the chart's Certificate: %v", err)
	}
	issuer := cert.DeepCopy()
	issuer.SetKind("Issuer")
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: "statusfold-selfsigned-issuer"}, issuer); err != nil {
		t.Fatalf("the chart's Issuer: %v", err)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	caPEM, certPEM, keyPEM := issue(t, dnsNames)
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: secretName}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": caPEM, corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}})
	injectCA(t, c, releaseNS+"/statusfold-serving-cert", caPEM)
	certDir := t.TempDir() // the Secret volume of the pod
	for name, data := range map[string][]byte{"ca.crt": caPEM, corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	widgetKind(t, c)
	aggregateClusterRoles(t, c)
	sa := serviceAccountConfig(t, cp, releaseNS, serviceAccount)
	webhookPort := framework.FreePort(t)
	routeWebhookService(t, c, webhookPort)
	runManager(t, aggregator.Config{
		Options:     aggregator.Options{WDSName: wdsName, CoalesceDelay: 20 * time.Millisecond},
		WDS:         sa,
		MetricsAddr: "0", ProbeAddr: "0",
		LeaderElection: true, LeaderElectionNamespace: releaseNS,
		WebhookPort: webhookPort, CertDir: certDir,
		SetupWebhooks: func(mgr manager.Manager) error { return webhooks.Setup(mgr, webhooks.Options{}) },
	}, false)
	checkWebhooksAdmit(t, c)
	checkLease(t, c)
	runScenario(t, c, aggregator.BindingResolutionInternal)
}

// certManagerCRDs are the Issuer and Certificate CRDs of the cert-manager module in go.mod.
func certManagerCRDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("go mod download github.com/cert-manager/cert-manager: %v", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	dir := filepath.Join(m.Dir, "deploy", "crds")
	return []string{filepath.Join(dir, "cert-manager.io_issuers.yaml"), filepath.Join(dir, "cert-manager.io_certificates.yaml")}
}

// issue makes a CA and a serving certificate for dnsNames, PEM-encoded, as cert-manager's
// self-signed issuer chain would.
func issue(t *testing.T, dnsNames []string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test cert-manager CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// injectCA does cainjector's job: every webhook configuration annotated
// cert-manager.io/inject-ca-from=<from> gets caPEM as each webhook's caBundle. It fails the test
// when neither of statusfold's configurations carries the annotation.
func injectCA(t *testing.T, c client.Client, from string, caPEM []byte) {
	t.Helper()
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		name := webhooks.ValidatingConfigurationName
		if kind == "MutatingWebhookConfiguration" {
			name = webhooks.MutatingConfigurationName
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
			t.Fatal(err)
		}
		if got := u.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != from {
			t.Fatalf("%s %s: cert-manager.io/inject-ca-from = %q, want %q", kind, name, got, from)
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			if err := unstructured.SetNestedField(h.(map[string]any), b64.StdEncoding.EncodeToString(caPEM), "clientConfig", "caBundle"); err != nil {
				t.Fatal(err)
			}
		}
		if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

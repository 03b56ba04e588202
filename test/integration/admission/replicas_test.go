package admission

import (
	"bytes"
	"context"
	"crypto/x509"
	"net"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/certs"
)

// testReplicasShareOneCA starts several rotators at once against a namespace without a Secret,
// as replicas of the manager do on a first install: one creates the Secret, the others lose the
// race (AlreadyExists, Conflict on the webhook configuration), read what it wrote and adopt it.
// All must end up serving certificates of the one CA that the configuration carries.
func testReplicasShareOneCA(t *testing.T, e *env) {
	ctx := context.Background()
	const ns, configName, replicas = "replicas", "replicas-test", 4
	side := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: configName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "nothing.replicas.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/none")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"replicas.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
			SideEffects:             &side,
			FailurePolicy:           &ignore,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, cfg} {
		if err := e.cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	rots := make([]*certs.Rotator, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			rots[i], errs[i] = certs.New(ctx, e.cp.Client, certs.Options{
				Namespace: ns, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
				ValidatingWebhookConfigurations: []string{configName},
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	secret := &corev1.Secret{}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certs.DefaultSecretName}, secret); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: configName}, cfg); err != nil {
		t.Fatal(err)
	}
	stored := secret.Data[certs.KeyCACert]
	if !bytes.Equal(cfg.Webhooks[0].ClientConfig.CABundle, stored) {
		t.Errorf("the configuration's caBundle is not the stored bundle:\n%s\nvs\n%s", cfg.Webhooks[0].ClientConfig.CABundle, stored)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(stored) {
		t.Fatal("the stored bundle does not parse")
	}
	for i, r := range rots {
		if !bytes.Equal(r.CABundle(), stored) {
			t.Errorf("replica %d holds another bundle than the stored one", i)
		}
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
			t.Errorf("replica %d serves a certificate the configuration does not trust: %v", i, err)
		}
	}
}

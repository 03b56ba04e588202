package admission

import (
	"context"
	"crypto/x509"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestCARotationSurvivesStaleReplica: replicas A and B share the certificate Secret and the
// webhook configurations. A rotates the CA; B has not checked since and still holds the old CA
// in memory while its periodic injection keeps running. B's injections must not take A's new CA
// out of the configurations (the apiserver would then refuse A's new serving certificate), and
// once both have injected, neither rewrites the configurations again.
func TestCARotationSurvivesStaleReplica(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	const ns = "rotation-replicas"
	v, m := webhooks.Configurations(webhooks.URLClientConfig("https://127.0.0.1:1", nil))
	for _, obj := range []client.Object{v, m, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	opts := certs.Options{
		Namespace: ns, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ValidatingWebhookConfigurations: []string{webhooks.ValidatingConfigurationName},
		MutatingWebhookConfigurations:   []string{webhooks.MutatingConfigurationName},
		BundlePropagationDelay:          10 * time.Millisecond,
	}
	a, err := certs.New(ctx, cp.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	// B counts its reads of the validating configuration: each injection reads it once, so two
	// more reads than at some instant mean that one whole injection ran after that instant.
	var reads atomic.Int64
	bClient, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	counted := interceptor.NewClient(bClient, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == "ValidatingWebhookConfiguration" {
				reads.Add(1)
			}
			return c.Get(ctx, key, obj, o...)
		},
	})
	bOpts := opts
	bOpts.InjectInterval = 50 * time.Millisecond
	b, err := certs.New(ctx, counted, bOpts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.Start(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	afterInjections := func(n int64) {
		t.Helper()
		from := reads.Load()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return reads.Load() >= from+n, nil
		}); err != nil {
			t.Fatalf("replica B did not inject: %v", err)
		}
	}

	oldCA := firstCert(t, b.CABundle())
	if err := a.Rotate(ctx, true); err != nil {
		t.Fatal(err)
	}
	newCA := firstCert(t, a.CABundle())
	if newCA.Equal(oldCA) {
		t.Fatal("replica A's CA did not change")
	}
	if firstCert(t, b.CABundle()).Equal(newCA) {
		t.Fatal("replica B already holds the new CA: the test needs it stale")
	}
	afterInjections(2)
	checkBundlesTrust(t, cp.Client, a, newCA, oldCA)
	testReplicasConverge(t, ctx, cp.Client, a, afterInjections)
}

// checkBundlesTrust: every webhook's caBundle holds both CAs and trusts A's serving certificate.
func checkBundlesTrust(t *testing.T, c client.Client, a *certs.Rotator, newCA, oldCA *x509.Certificate) {
	t.Helper()
	served, err := a.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"validating", "mutating"} {
		bundles := configBundles(t, c, kind)
		for i, bundle := range bundles {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(bundle) {
				t.Fatalf("%s webhook %d: caBundle does not parse", kind, i)
			}
			for name, ca := range map[string]*x509.Certificate{"new": newCA, "old": oldCA} {
				if !containsCert(bundle, ca) {
					t.Errorf("%s webhook %d: the %s CA is missing from caBundle after the stale replica injected", kind, i, name)
				}
			}
			if _, err := served.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
				t.Errorf("%s webhook %d: replica A's serving certificate is not trusted: %v", kind, i, err)
			}
		}
	}
}

// testReplicasConverge: once both replicas have injected, further injections by either leave
// the configurations as they are (same bytes, no update).
func testReplicasConverge(t *testing.T, ctx context.Context, c client.Client, a *certs.Rotator, afterInjections func(int64)) {
	t.Helper()
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	afterInjections(2)
	before := configVersions(t, c)
	for range 3 {
		if err := a.Check(ctx); err != nil {
			t.Fatal(err)
		}
		afterInjections(2)
	}
	if after := configVersions(t, c); after != before {
		t.Errorf("the replicas kept rewriting the configurations: resourceVersions %v, then %v", before, after)
	}
}

func configVersions(t *testing.T, c client.Client) [2]string {
	t.Helper()
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, v); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: webhooks.MutatingConfigurationName}, m); err != nil {
		t.Fatal(err)
	}
	return [2]string{v.ResourceVersion, m.ResourceVersion}
}

// configBundles are the caBundles of every webhook of statusfold's validating or mutating
// configuration.
func configBundles(t *testing.T, c client.Client, kind string) [][]byte {
	t.Helper()
	var out [][]byte
	if kind == "validating" {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, v); err != nil {
			t.Fatal(err)
		}
		for _, w := range v.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
		return out
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: webhooks.MutatingConfigurationName}, m); err != nil {
		t.Fatal(err)
	}
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func firstCert(t *testing.T, bundle []byte) *x509.Certificate {
	t.Helper()
	cs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func containsCert(bundle []byte, c *x509.Certificate) bool {
	cs, _ := certutil.ParseCertsPEM(bundle)
	for _, got := range cs {
		if got.Equal(c) {
			return true
		}
	}
	return false
}

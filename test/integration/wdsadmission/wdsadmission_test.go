package wdsadmission

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// kubestellarCRDs are the CRDs KubeStellar's controller-manager installs in a WDS.
var kubestellarCRDs = []string{"bindingpolicies", "bindings", "combinedstatuses", "statuscollectors"}

const goodCollector = `apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: count-wecs}
spec:
  combinedFields: [{name: count, type: COUNT}]
`

// TestAdmissionInSeparateWDS: with the WDS another apiserver than the hosting cluster, the
// manager (found the WDS from its ControlPlane) registers nothing while the WDS does not serve
// StatusCollectors, then registers its CRDs and webhook configurations in the WDS with a URL
// client config; kubectl apply to the WDS rejects a bad collector with its field paths and
// accepts a good one, and a CA rotation in the hosting cluster's Secret reaches the WDS.
func TestAdmissionInSeparateWDS(t *testing.T) {
	hosting, wds := startSpaces(t)
	port := framework.FreePort(t)
	p := startManager(t, hosting.Kubeconfig, "--kubeflex", "--wds-name=wds1", "--its-name=its1",
		"--namespace=statusfold-system", "--webhook-certs=builtin", "--webhook-port="+strconv.Itoa(port),
		"--wds-webhook-url=https://127.0.0.1:"+strconv.Itoa(port), "--webhook-cert-dir="+t.TempDir(),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--kubeflex-wait-log-interval=1s")

	// KubeStellar has not installed its CRDs in the WDS yet: nothing is registered.
	p.waitLog(t, "waiting to register admission in the WDS", time.Minute)
	assertNothingRegistered(t, wds.Client)

	installKubeStellarCRDs(t, wds)
	p.waitLog(t, "admission registered in the WDS", time.Minute)
	assertOwnCRDs(t, wds.Client)
	assertURLConfigurations(t, wds.Client, "https://127.0.0.1:"+strconv.Itoa(port))
	assertAdmission(t, wds)
	assertRotationReachesWDS(t, hosting.Client, wds.Client)
}

// startSpaces starts the hosting cluster, with KubeFlex's ControlPlane CRD, the namespaces
// wds1-system and statusfold-system, and the ControlPlanes wds1 (type k8s, its kubeconfig in
// wds1-system/admin-kubeconfig) and its1 (type host: the ITS is the hosting cluster, which so has
// the WorkStatus and ManagedCluster CRDs), and the WDS, with no CRDs.
func startSpaces(t *testing.T) (hosting, wds *framework.ControlPlane) {
	t.Helper()
	hosting = framework.RunControlPlane(t, framework.WithoutCRDs(), framework.WithExtraCRDs(
		filepath.Join("testdata", "controlplanes.yaml"),
		filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "control.kubestellar.io_workstatuses.yaml"),
		filepath.Join(framework.RepoRoot(), "config", "crd", "external")))
	wds = framework.RunControlPlane(t, framework.WithoutCRDs())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wds1-system"}}
	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-system"}}
	create(t, hosting.Client, ns, own, kubeconfigSecret(t, "wds1-system", "admin-kubeconfig", wds),
		controlPlane("wds1", "wds", "k8s", "admin-kubeconfig"), controlPlane("its1", "its", "host", ""))
	return hosting, wds
}

// installKubeStellarCRDs installs in the WDS the CRDs KubeStellar's controller-manager installs.
func installKubeStellarCRDs(t *testing.T, wds *framework.ControlPlane) {
	t.Helper()
	var paths []string
	for _, r := range kubestellarCRDs {
		paths = append(paths, filepath.Join(framework.RepoRoot(), "config", "crd", "bases", "control.kubestellar.io_"+r+".yaml"))
	}
	if _, err := envtest.InstallCRDs(wds.Config, envtest.CRDInstallOptions{Paths: paths}); err != nil {
		t.Fatal(err)
	}
}

func assertNothingRegistered(t *testing.T, wds client.Client) {
	t.Helper()
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	for _, l := range []client.ObjectList{&vs, &ms, crds} {
		if err := wds.List(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	if len(vs.Items)+len(ms.Items)+len(crds.Items) != 0 {
		t.Fatalf("registered in a WDS that does not serve StatusCollectors: %d validating, %d mutating configurations, %d CRDs",
			len(vs.Items), len(ms.Items), len(crds.Items))
	}
}

// assertOwnCRDs: statusfold's kinds that KubeStellar does not install are served in the WDS.
func assertOwnCRDs(t *testing.T, wds client.Client) {
	t.Helper()
	for _, name := range []string{"contentclassifiers.control.kubestellar.io", "aggregationpolicies.policy.statusfold.dev"} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := wds.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s in the WDS: %v", name, err)
		}
	}
}

// assertURLConfigurations: the WDS's configurations are webhooks.Configurations (the chart's and
// config/webhook's) but for the URL client config and the caBundle.
func assertURLConfigurations(t *testing.T, wds client.Client, base string) {
	t.Helper()
	ctx := context.Background()
	wantV, wantM := webhooks.Configurations(webhooks.URLClientConfig(base, nil))
	v, m := &admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}
	eventually(t, "configurations with a CA bundle", 30*time.Second, func() (bool, string) {
		if err := wds.Get(ctx, client.ObjectKeyFromObject(wantV), v); err != nil {
			return false, err.Error()
		}
		if err := wds.Get(ctx, client.ObjectKeyFromObject(wantM), m); err != nil {
			return false, err.Error()
		}
		return len(v.Webhooks) > 0 && len(v.Webhooks[0].ClientConfig.CABundle) > 0 && len(m.Webhooks[0].ClientConfig.CABundle) > 0, "no caBundle yet"
	})
	if len(v.Webhooks) != len(wantV.Webhooks) || len(m.Webhooks) != len(wantM.Webhooks) {
		t.Fatalf("%d validating and %d mutating webhooks, want %d and %d", len(v.Webhooks), len(m.Webhooks), len(wantV.Webhooks), len(wantM.Webhooks))
	}
	for i, w := range v.Webhooks {
		want := wantV.Webhooks[i]
		if w.Name != want.Name || *w.ClientConfig.URL != *want.ClientConfig.URL || w.ClientConfig.Service != nil ||
			*w.FailurePolicy != *want.FailurePolicy || len(w.MatchConditions) != 1 ||
			w.MatchConditions[0] != want.MatchConditions[0] || w.Rules[0].Resources[0] != want.Rules[0].Resources[0] {
			t.Errorf("validating webhook %d: %+v, want %+v", i, w, want)
		}
	}
	if got, want := *m.Webhooks[0].ClientConfig.URL, *wantM.Webhooks[0].ClientConfig.URL; got != want {
		t.Errorf("mutating webhook URL %s, want %s", got, want)
	}
}

// assertAdmission: kubectl apply to the WDS rejects the bad collector with its field paths and
// accepts the good one (defaulted by the mutating webhook).
func assertAdmission(t *testing.T, wds *framework.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	_, stderr, err := wds.Kubectl(ctx, nil, "apply", "-f", filepath.Join("testdata", "bad-statuscollector.yaml"))
	if err == nil {
		t.Fatal("the bad StatusCollector was admitted")
	}
	t.Logf("kubectl apply of the bad StatusCollector: %s", stderr)
	for _, want := range []string{`spec.select: Forbidden`, `spec.filter: Invalid value`, `spec.combinedFields[0].subject: Required value: MAX needs a subject`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error lacks %q:\n%s", want, stderr)
		}
	}
	if _, stderr, err := wds.Kubectl(ctx, []byte(goodCollector), "apply", "-f", "-"); err != nil {
		t.Fatalf("the good StatusCollector: %v\n%s", err, stderr)
	}
	out, _, err := wds.Kubectl(ctx, nil, "get", "statuscollector", "count-wecs", "-o", "jsonpath={.spec.limit}")
	if err != nil || out != "20" {
		t.Errorf("the good StatusCollector's spec.limit %q (%v), want 20 (set by the mutating webhook)", out, err)
	}
}

// assertRotationReachesWDS: a new CA written to the certificates' Secret in the hosting cluster
// (as another replica's rotation does) is added to the caBundle of the WDS's configurations,
// next to the CA still serving, and admission goes on working.
func assertRotationReachesWDS(t *testing.T, hosting, wds client.Client) {
	t.Helper()
	ctx := context.Background()
	newCA := newCAPEM(t)
	secret := &corev1.Secret{}
	if err := hosting.Get(ctx, client.ObjectKey{Namespace: "statusfold-system", Name: certs.DefaultSecretName}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[certs.KeyCACert] = append(append([]byte{}, newCA...), secret.Data[certs.KeyCACert]...)
	if err := hosting.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	eventually(t, "the new CA in the WDS's validating configuration", time.Minute, func() (bool, string) {
		if err := wds.Get(ctx, client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, v); err != nil {
			return false, err.Error()
		}
		for _, w := range v.Webhooks {
			if !bytes.Contains(w.ClientConfig.CABundle, newCA) {
				return false, "webhook " + w.Name + " lacks it"
			}
		}
		return true, ""
	})
}

// newCAPEM is a CA certificate, PEM-encoded, that no statusfold replica made.
func newCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "rotated-ca"}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
}

package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestWebhookDown installs statusfold's webhook configurations pointing at a server that is not
// there: with failurePolicy Fail none of statusfold's kinds can be created. Objects that got in
// before the webhooks were registered are reported in their status by the controller.
func TestWebhookDown(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	c := cp.Client

	// In before the webhooks: a collector whose CEL does not compile, a classifier that makes
	// status desired state.
	badCollector := &controlv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: "got-in"},
		Spec:       controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{{Name: "x", Def: "frobnicate(returned.status)"}}},
	}
	badClassifier := &controlv1alpha1.ContentClassifier{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments.v1.apps"},
		Spec:       controlv1alpha1.ContentClassifierSpec{DesiredStatePointers: []controlv1alpha1.JSONPointer{{"status", "replicas"}}},
	}
	for _, o := range []client.Object{badCollector, badClassifier} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T before the webhooks: %v", o, err)
		}
	}

	installUnreachableWebhooks(t, c)
	good := []client.Object{
		&controlv1alpha1.StatusCollector{
			ObjectMeta: metav1.ObjectMeta{Name: "good"},
			Spec:       controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
		},
		&controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "pods.v1"}},
		&controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "good"}},
		&policyv1alpha1.AggregationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "good"},
			Spec: policyv1alpha1.AggregationPolicySpec{
				Target: policyv1alpha1.TargetKind{Group: "example.io", Kind: "Widget"},
				Rego:   "package ok\ncombine := {\"n\": \"min\"}\n",
			},
		},
	}
	for _, o := range good {
		err := c.Create(ctx, o)
		if err == nil {
			t.Errorf("%T %s was created although its webhook is down", o, o.GetName())
			continue
		}
		if !strings.Contains(err.Error(), "failed calling webhook") {
			t.Errorf("%T: error %q does not say the webhook failed", o, err)
		}
	}

	startManager(t, cp)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var sc controlv1alpha1.StatusCollector
		var cc controlv1alpha1.ContentClassifier
		if err := c.Get(ctx, client.ObjectKeyFromObject(badCollector), &sc); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(badClassifier), &cc); err != nil {
			t.Fatal(err)
		}
		scOK := len(sc.Status.Errors) > 0 && strings.Contains(sc.Status.Errors[0], "spec.select[0].def") && strings.Contains(sc.Status.Errors[0], "frobnicate")
		ccOK := len(cc.Status.Errors) > 0 && strings.Contains(cc.Status.Errors[0], "spec.desiredStatePointers[0]")
		if scOK && ccOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("problems not reported in status: StatusCollector %v, ContentClassifier %v", sc.Status.Errors, cc.Status.Errors)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// installUnreachableWebhooks registers config/webhook's configurations with every client config
// pointing at a port where nothing listens.
func installUnreachableWebhooks(t *testing.T, c client.Client) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + framework.FreeAddr(t) + "/unreachable"
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if len(raw.Raw) == 0 {
			continue
		}
		switch {
		case strings.Contains(string(raw.Raw), "ValidatingWebhookConfiguration"):
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			if err := utilyaml.Unmarshal(raw.Raw, &v); err != nil {
				t.Fatal(err)
			}
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
			}
			if err := c.Create(context.Background(), &v); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(string(raw.Raw), "MutatingWebhookConfiguration"):
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := utilyaml.Unmarshal(raw.Raw, &m); err != nil {
				t.Fatal(err)
			}
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
			}
			if err := c.Create(context.Background(), &m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	sfscheme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/webhooks/check"
)

// typicalCollector is the shape most collectors have: a filter, a groupBy, COUNT and SUM.
func typicalCollector(name string) *controlv1alpha1.StatusCollector {
	return &controlv1alpha1.StatusCollector{
		TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "StatusCollector"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: controlv1alpha1.StatusCollectorSpec{
			Filter:  expr(`returned.status.conditions.exists(c, c.type == "Available" && c.status == "True")`),
			GroupBy: []controlv1alpha1.NamedExpression{{Name: "region", Def: `inventory.labels["region"]`}},
			CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "wecs", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "ready", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.readyReplicas")},
			},
		},
	}
}

func request(t testing.TB, gvr schema.GroupVersionResource, obj runtime.Object) admission.Request {
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Resource: metav1.GroupVersionResource(gvr),
		Object: runtime.RawExtension{Raw: raw},
	}}
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func handle(b *testing.B, wh *admission.Webhook, req admission.Request, wantWarnings int) {
	b.Helper()
	resp := wh.Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Warnings) != wantWarnings {
		b.Fatalf("allowed %v, warnings %q, result %v", resp.Allowed, resp.Warnings, resp.Result)
	}
}

// BenchmarkStatusCollectorAdmission measures the validating handler for a typical collector
// that the compiler has not seen (a new name each time, so nothing is cached): decode, compile
// the four expressions, all static checks.
func BenchmarkStatusCollectorAdmission(b *testing.B) {
	c, err := check.New(check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	wh := admission.WithValidator(sfscheme.New(), NewStatusCollectorValidator(c))
	gvr := controlv1alpha1.GroupVersion.WithResource(controlv1alpha1.ResourceStatusCollectors)
	reqs := make([]admission.Request, 1000)
	for i := range reqs {
		reqs[i] = request(b, gvr, typicalCollector(fmt.Sprintf("sc-%d", i)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(reqs) == 0 && i > 0 {
			b.StopTimer()
			c, _ = check.New(check.Options{}) // a fresh compiler cache, so every request compiles
			wh = admission.WithValidator(sfscheme.New(), NewStatusCollectorValidator(c))
			b.StartTimer()
		}
		handle(b, wh, reqs[i%len(reqs)], 0)
	}
}

// schemaPolicy applies three collectors to Deployments and Jobs; one collector misspells a
// status field of Deployment, which the schema-aware check reports.
func schemaPolicy() (*controlv1alpha1.BindingPolicy, []*controlv1alpha1.StatusCollector) {
	typo := typicalCollector("typo")
	typo.Spec.CombinedFields[1].Subject = expr("returned.status.avaliableReplicas")
	scs := []*controlv1alpha1.StatusCollector{typicalCollector("typical"), typo, {
		ObjectMeta: metav1.ObjectMeta{Name: "per-wec"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "generation", Def: "obj.metadata.generation"},
			{Name: "observed", Def: "returned.status.observedGeneration"}}},
	}}
	bp := &controlv1alpha1.BindingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "bp"},
		Spec: controlv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"location-group": "edge"}}},
			Downsync: []controlv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps"), Resources: []string{"deployments"}},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"typical", "typo", "per-wec"}},
			}, {
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("batch"), Resources: []string{"jobs"}},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"per-wec"}},
			}},
		},
	}
	return bp, scs
}

func schemaChecker(b *testing.B, scs []*controlv1alpha1.StatusCollector, schemas *check.OfflineSchemas) *check.Checker {
	byName := map[string]*controlv1alpha1.StatusCollector{}
	for _, sc := range scs {
		byName[sc.Name] = sc
	}
	c, err := check.New(check.Options{Mapper: schemas, Schemas: schemas,
		Collectors: check.CollectorGetterFunc(func(_ context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
			if sc, ok := byName[name]; ok {
				return sc, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{}, name)
		})})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkBindingPolicyAdmission measures the validating handler for a BindingPolicy with the
// schema-aware check: three collectors typed against apps/v1 Deployment and one against batch/v1
// Job. "warm" is the steady state (typed environments and compiled collectors cached, as in a
// running manager); "cold" builds the typed CEL environments from the OpenAPI schemas each time
// (the first policy after a schema change).
func BenchmarkBindingPolicyAdmission(b *testing.B) {
	schemas, err := check.LoadSchemas("check/testdata")
	if err != nil {
		b.Fatal(err)
	}
	bp, scs := schemaPolicy()
	gvr := controlv1alpha1.GroupVersion.WithResource(controlv1alpha1.ResourceBindingPolicies)
	req := request(b, gvr, bp)
	b.Run("warm", func(b *testing.B) {
		wh := admission.WithValidator(sfscheme.New(), NewBindingPolicyValidator(schemaChecker(b, scs, schemas)))
		handle(b, wh, req, 2)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			handle(b, wh, req, 2)
		}
	})
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			wh := admission.WithValidator(sfscheme.New(), NewBindingPolicyValidator(schemaChecker(b, scs, schemas)))
			b.StartTimer()
			handle(b, wh, req, 2)
		}
	})
}

// Package samples_test checks the sample manifests: every document decodes, carries a one-line
// comment, and every StatusCollector passes the admission checks of the collector engine.
package samples_test

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/config"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/webhooks/check"
)

type sampleDoc struct {
	file string
	raw  []byte
	obj  *unstructured.Unstructured
}

// sampleDocs splits every embedded sample file into its YAML documents.
func sampleDocs(t *testing.T) []sampleDoc {
	t.Helper()
	var docs []sampleDoc
	for _, pattern := range []string{"samples/*.yaml", "samples/library/*.yaml"} {
		files, err := fs.Glob(config.Samples, pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := fs.ReadFile(config.Samples, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range bytes.Split(data, []byte("\n---\n")) {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(part, &u.Object); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if len(u.Object) == 0 {
					continue
				}
				docs = append(docs, sampleDoc{file: f, raw: part, obj: u})
			}
		}
	}
	if len(docs) == 0 {
		t.Fatal("no samples embedded")
	}
	return docs
}

func TestEverySampleSaysWhatItShows(t *testing.T) {
	for _, d := range sampleDocs(t) {
		if !strings.HasPrefix(strings.TrimSpace(string(d.raw)), "# ") {
			t.Errorf("%s: %s %s has no leading comment saying what it shows", d.file, d.obj.GetKind(), d.obj.GetName())
		}
	}
}

func TestSampleCollectorsPassAdmissionChecks(t *testing.T) {
	comp, err := collector.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	collectors := map[string]bool{}
	for _, d := range sampleDocs(t) {
		if d.obj.GetKind() != "StatusCollector" {
			continue
		}
		var sc controlv1alpha1.StatusCollector
		if err := yaml.UnmarshalStrict(d.raw, &sc); err != nil {
			t.Errorf("%s: %v", d.file, err)
			continue
		}
		collectors[sc.Name] = true
		if _, errs, warnings := comp.Compile(&sc); len(errs) > 0 || len(warnings) > 0 {
			t.Errorf("%s: %s: errors %v, warnings %v", d.file, sc.Name, errs, warnings)
		}
		if strings.HasPrefix(d.file, "samples/library/") && path.Base(d.file) != sc.Name+".yaml" {
			t.Errorf("%s: library file must be named after its collector %q", d.file, sc.Name)
		}
	}
	// Every collector a sample BindingPolicy names is among the samples.
	for _, d := range sampleDocs(t) {
		if d.obj.GetKind() != "BindingPolicy" {
			continue
		}
		var bp controlv1alpha1.BindingPolicy
		if err := yaml.UnmarshalStrict(d.raw, &bp); err != nil {
			t.Errorf("%s: %v", d.file, err)
			continue
		}
		for i, c := range bp.Spec.Downsync {
			for _, name := range c.StatusCollectors {
				if !collectors[name] {
					t.Errorf("%s: BindingPolicy %s downsync[%d] names collector %q that no sample defines", d.file, bp.Name, i, name)
				}
			}
		}
	}
}

// TestSampleBindingPoliciesPassTypedAdmissionChecks runs the webhook's BindingPolicy check, which
// types `obj` and `returned.status` with the selected kinds' OpenAPI schemas (apps/v1 and batch/v1
// from the checker's offline test schemas), over every sample BindingPolicy: no errors and no
// warnings.
func TestSampleBindingPoliciesPassTypedAdmissionChecks(t *testing.T) {
	schemas, err := check.LoadSchemas("../../webhooks/check/testdata")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*controlv1alpha1.StatusCollector{}
	var policies []*controlv1alpha1.BindingPolicy
	for _, d := range sampleDocs(t) {
		switch d.obj.GetKind() {
		case "StatusCollector":
			sc := &controlv1alpha1.StatusCollector{}
			if err := yaml.UnmarshalStrict(d.raw, sc); err != nil {
				t.Fatal(err)
			}
			byName[sc.Name] = sc
		case "BindingPolicy":
			bp := &controlv1alpha1.BindingPolicy{}
			if err := yaml.UnmarshalStrict(d.raw, bp); err != nil {
				t.Fatal(err)
			}
			policies = append(policies, bp)
		}
	}
	c, err := check.New(check.Options{
		Collectors: check.CollectorGetterFunc(func(_ context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
			return byName[name], nil
		}),
		Mapper:  schemas,
		Schemas: schemas,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(policies) == 0 {
		t.Fatal("no sample BindingPolicies")
	}
	for _, bp := range policies {
		errs, warnings := c.BindingPolicy(context.Background(), bp)
		if len(errs) > 0 || len(warnings) > 0 {
			t.Errorf("BindingPolicy %s: errors %v, warnings %v", bp.Name, errs, warnings)
		}
	}
}

// TestSampleAggregationPoliciesPassAdmission compiles every sample AggregationPolicy and runs its
// examples, as admission does.
func TestSampleAggregationPoliciesPassAdmission(t *testing.T) {
	n := 0
	for _, d := range sampleDocs(t) {
		if d.obj.GetKind() != "AggregationPolicy" {
			continue
		}
		n++
		p := &policyv1alpha1.AggregationPolicy{}
		if err := yaml.UnmarshalStrict(d.raw, p); err != nil {
			t.Fatalf("%s: %v", d.file, err)
		}
		if errs := aggregation.ValidatePolicy(p); len(errs) > 0 {
			t.Errorf("%s: AggregationPolicy %s: %v", d.file, p.Name, errs)
		}
	}
	if n == 0 {
		t.Error("no sample AggregationPolicy")
	}
}

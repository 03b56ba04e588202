// Package samples_test checks the sample manifests: every document decodes, carries a one-line
// comment, and every StatusCollector passes the admission checks of the collector engine.
package samples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
			// apimachinery's YAML reader, as `statusfold local` splits the samples it applies.
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				part, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
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

// leadingComment returns the comment that says what a document shows: the comment line just
// before its first line of YAML, in a block of comment lines that starts the document (a file's
// first document may start with a comment about the whole file). It must be a sentence of a few
// words.
func leadingComment(doc []byte) (string, error) {
	var last string
	for line := range strings.Lines(string(doc)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			last = "" // a blank line detaches the comment above it
			continue
		case strings.HasPrefix(line, "#"):
			last = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			continue
		}
		switch {
		case last == "":
			return "", errors.New("no comment line right before the first line of YAML")
		case len(strings.Fields(last)) < 3:
			return "", fmt.Errorf("comment %q is too short to say what the document shows", last)
		}
		return last, nil
	}
	return "", errors.New("no YAML after the comment")
}

func TestLeadingComment(t *testing.T) {
	const yaml = "apiVersion: v1\nkind: Namespace\n"
	cases := []struct {
		name, doc, want, wantErr string
	}{
		{"one line", "# The demo namespace.\n" + yaml, "The demo namespace.", ""},
		{"file comment first", "# File.\n#\n# Number of WECs: one row.\n" + yaml, "Number of WECs: one row.", ""},
		{"CRLF", "# The demo namespace.\r\n" + yaml, "The demo namespace.", ""},
		{"blank line first", "\n# The demo namespace.\n" + yaml, "The demo namespace.", ""},
		{"none", yaml, "", "no comment line"},
		{"comment after the first key", "apiVersion: v1\n# The demo namespace.\nkind: Namespace\n", "", "no comment line"},
		{"empty comment last", "# The demo namespace.\n#\n" + yaml, "", "no comment line"},
		{"blank line between", "# The demo namespace.\n\n" + yaml, "", "no comment line"},
		{"too short", "# demo\n" + yaml, "", "too short"},
		{"comment only", "# The demo namespace.\n", "", "no YAML"},
	}
	for _, tc := range cases {
		got, err := leadingComment([]byte(tc.doc))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: comment %q, error %v; want an error containing %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: comment %q, error %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Every sample document starts with its own comment saying what it shows (docs/local.md "The
// samples"): two documents with the same comment do not each say what they show.
func TestEverySampleSaysWhatItShows(t *testing.T) {
	seen := map[string]string{}
	for _, d := range sampleDocs(t) {
		what := fmt.Sprintf("%s: %s %s", d.file, d.obj.GetKind(), d.obj.GetName())
		c, err := leadingComment(d.raw)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if other, ok := seen[c]; ok {
			t.Errorf("%s has the same comment as %s: %q", what, other, c)
		}
		seen[c] = what
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

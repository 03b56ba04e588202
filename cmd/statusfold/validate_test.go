package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func runValidateForTest(t *testing.T, o *validateOptions) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runValidate(context.Background(), &out, &errOut, o)
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.code
	default:
		t.Fatalf("validate: %v", err)
	}
	return out.String(), errOut.String(), code
}

// validateCase is one run of `statusfold validate`: its options, and the stdout, stderr and exit
// status it must give.
type validateCase struct {
	name       string
	opts       validateOptions
	wantOut    string
	wantErr    string
	wantStatus int
}

// validateCommandCases are TestValidateCommand's runs: valid objects with and without schemas,
// invalid objects, and mistakes the CRD schemas catch.
var validateCommandCases = []validateCase{
	{
		name: "valid, no schemas: no schema warnings",
		opts: validateOptions{files: []string{filepath.Join("testdata", "validate", "good.yaml")}},
		wantOut: `statuscollector/ready-count valid (testdata/validate/good.yaml)
bindingpolicy/nginx valid (testdata/validate/good.yaml)
contentclassifier/jobs.v1.batch valid (testdata/validate/good.yaml)
`,
	},
	{
		name: "valid with schemas: the webhook's warnings",
		opts: validateOptions{files: []string{filepath.Join("testdata", "validate", "good.yaml")}, schemas: filepath.Join("..", "..", "webhooks", "check", "testdata")},
		wantOut: `statuscollector/ready-count valid (testdata/validate/good.yaml)
bindingpolicy/nginx valid (testdata/validate/good.yaml)
contentclassifier/jobs.v1.batch valid (testdata/validate/good.yaml)
`,
		wantErr: `Warning: collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status
Warning: spec.dontPropagatePointers[0]: batch/v1 Job has no field "readyy" at "/status", so this pointer matches nothing
`,
	},
	{
		name: "invalid objects: kubectl-style errors, exit 1",
		opts: validateOptions{files: []string{filepath.Join("testdata", "validate", "bad.yaml")}},
		wantErr: `error: testdata/validate/bad.yaml: The StatusCollector "broken" is invalid: 
* spec.select: Forbidden: select and combinedFields are mutually exclusive
* spec.filter: Invalid value: "inventory.nmae == \"x\"": compilation failed: ERROR: <input>:1:10: undefined field 'nmae'
 | inventory.nmae == "x"
 | .........^
* spec.combinedFields[0].subject: Required value: SUM needs a subject
error: testdata/validate/bad.yaml: BindingPolicy in version "v1alpha1" cannot be handled as a BindingPolicy: strict decoding error: unknown field "spec.downsync[0].statusCollection"
hint: spec.downsync[].statusCollection is the pre-0.26 KubeStellar shape: list the collectors in the clause's statusCollectors (spec.downsync[].statusCollectors)
error: testdata/validate/bad.yaml: The ContentClassifier "jobs.v1.batch" is invalid: spec.desiredStatePointers[0]: Invalid value: ["status","ready"]: no part of .status can be made desired state
`,
		wantStatus: 1,
	},
	{
		name: "schema-level mistakes: the apiserver's messages, a hint for a moved field; limit 0 defaulted before the schema's minimum",
		opts: validateOptions{files: []string{filepath.Join("testdata", "validate", "schema.yaml")}},
		wantOut: `statuscollector/zero-limit valid (testdata/validate/schema.yaml)
`,
		wantErr: `error: testdata/validate/schema.yaml: The StatusCollector "number-subject" is invalid: spec.combinedFields[0].subject: Invalid value: "integer": spec.combinedFields[0].subject in body must be of type string: "integer"
error: testdata/validate/schema.yaml: The StatusCollector "string-select" is invalid: spec.select: Invalid value: "string": spec.select in body must be of type array: "string"
error: testdata/validate/schema.yaml: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string
error: testdata/validate/schema.yaml: The BindingPolicy "string-flag" is invalid: spec.downsync[0].wantSingletonReportedState: Invalid value: "string": spec.downsync[0].wantSingletonReportedState in body must be of type boolean: "string"
error: testdata/validate/schema.yaml: BindingPolicy in version "v1alpha1" cannot be handled as a BindingPolicy: strict decoding error: unknown field "spec.wantSingletonReportedState"
hint: spec.wantSingletonReportedState moved in KubeStellar 0.26: set wantSingletonReportedState on each downsync clause (spec.downsync[].wantSingletonReportedState)
`,
		wantStatus: 1,
	},
}

func TestValidateCommand(t *testing.T) {
	for _, tt := range validateCommandCases {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runValidateForTest(t, &tt.opts)
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErr, errOut); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if code != tt.wantStatus {
				t.Errorf("exit status %d, want %d", code, tt.wantStatus)
			}
		})
	}
}

func TestValidateList(t *testing.T) {
	out, errOut, code := runValidateForTest(t, &validateOptions{files: []string{filepath.Join("testdata", "validate", "list.yaml")}})
	want := `error: testdata/validate/list.yaml: error validating data: invalid object to validate; if you choose to ignore these errors, turn validation off with --validate=false
error: testdata/validate/list.yaml: The StatusCollector "in-list" is invalid: spec.select[0].def: Invalid value: "inventory.nmae": compilation failed: ERROR: <input>:1:10: undefined field 'nmae'
 | inventory.nmae
 | .........^
`
	if out != "" || errOut != want || code != 1 {
		t.Errorf("exit %d, stdout %q, stderr (-want +got):\n%s", code, out, cmp.Diff(want, errOut))
	}
}

func TestValidateFolderAndJSON(t *testing.T) {
	out, _, code := runValidateForTest(t, &validateOptions{files: []string{filepath.Join("testdata", "validate")}, output: "json"})
	if code != 1 {
		t.Errorf("exit status %d, want 1 (bad.yaml is in the folder)", code)
	}
	var results []validateResult
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	type brief struct {
		Kind, Name string
		Valid      bool
		Fields     string
	}
	var got []brief
	for _, r := range results {
		var fields []string
		for _, e := range r.Errors {
			fields = append(fields, e.Type+":"+e.Field)
		}
		got = append(got, brief{r.Kind, r.Name, r.Valid, strings.Join(fields, ",")})
	}
	want := []brief{
		{"StatusCollector", "broken", false, "FieldValueForbidden:spec.select,FieldValueInvalid:spec.filter,FieldValueRequired:spec.combinedFields[0].subject"},
		{"BindingPolicy", "old-shape", false, "BadRequest:"},
		{"ContentClassifier", "jobs.v1.batch", false, "FieldValueInvalid:spec.desiredStatePointers[0]"},
		{"StatusCollector", "ready-count", true, ""},
		{"BindingPolicy", "nginx", true, ""},
		{"ContentClassifier", "jobs.v1.batch", true, ""},
		{"", "", false, "ClientError:"}, // list.yaml's bare list, which kubectl cannot decode
		{"StatusCollector", "in-list", false, "FieldValueInvalid:spec.select[0].def"},
		{"StatusCollector", "number-subject", false, "FieldValueTypeInvalid:spec.combinedFields[0].subject"},
		{"StatusCollector", "string-select", false, "FieldValueTypeInvalid:spec.select"},
		{"BindingPolicy", "number-label", false, "ClientError:"},
		{"BindingPolicy", "string-flag", false, "FieldValueTypeInvalid:spec.downsync[0].wantSingletonReportedState"},
		{"BindingPolicy", "spec-level", false, "BadRequest:"},
		{"StatusCollector", "zero-limit", true, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestValidateSeedExamples(t *testing.T) {
	out, errOut, code := runValidateForTest(t, &validateOptions{files: []string{filepath.Join("..", "..", "api", "control", "v1alpha1", "testdata")}})
	if code != 0 || errOut != "" {
		t.Errorf("seed examples: exit %d\n%s", code, errOut)
	}
	if n := strings.Count(out, " valid "); n != 9 {
		t.Errorf("%d valid objects, want 9:\n%s", n, out)
	}
}

func TestValidateBadInput(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runValidate(context.Background(), &out, &errOut, &validateOptions{files: []string{"testdata/validate/none.yaml"}}); err == nil {
		t.Error("missing file accepted")
	}
	if err := runValidate(context.Background(), &out, &errOut, &validateOptions{files: []string{"testdata/validate/good.yaml"}, output: "table"}); err == nil {
		t.Error("unsupported output format accepted")
	}
}

// TestValidateUndecodable: a document that kubectl cannot decode fails `kubectl apply` before
// anything is sent, so validate reports it with kubectl's words and exits 1 — it is not a
// document of "another kind" to skip.
func TestValidateUndecodable(t *testing.T) {
	const f = "testdata/undecodable.yaml"
	const stopValidate = "; if you choose to ignore these errors, turn validation off with --validate=false"
	stdout, stderr, code := runValidateForTest(t, &validateOptions{files: []string{f}})
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing valid", stdout)
	}
	want := strings.Join([]string{
		"error: " + f + ": error validating data: invalid object to validate" + stopValidate,
		"error: " + f + ": error validating data: invalid object to validate" + stopValidate,
		"error: " + f + ": error validating data: kind not set" + stopValidate,
		"error: " + f + ": json: cannot unmarshal array into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta",
		"error: " + f + ": json: cannot unmarshal array into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta",
		"",
	}, "\n")
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
)

type validateOptions struct {
	files     []string
	recursive bool
	schemas   string
	output    string
}

func newValidateCommand() *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR ...",
		Short: "Run the admission checks offline on StatusCollector, ContentClassifier, BindingPolicy and AggregationPolicy YAML",
		Long: `Check objects offline exactly as "kubectl apply" of them would be checked in a cluster with
statusfold installed. Every YAML or JSON document of the given files (and of the .yaml, .yml and
.json files of the given folders) of statusfold's kinds goes through kubectl's own checks, the
apiserver's handling of the CRD (built into this binary) — strict decoding, where an unknown or
duplicate field is an error naming its path, the schema's defaults, the defaulting webhook, the
schema's validation of types, enums, limits, required fields and CEL rules — and then the
validating webhooks' checks. Errors are printed as kubectl prints them ("error: FILE: " and the
apiserver's message); warnings like kubectl prints the webhooks' warnings. Other kinds are
skipped; a document that kubectl cannot take at all (not an object, no kind) is an error, as
with kubectl apply. A BindingPolicy's collectors are looked up among the given files.

With --schemas DIR (OpenAPI v3 documents, e.g. "kubectl get --raw /openapi/v3/apis/apps/v1", and
CustomResourceDefinition manifests) the schema-aware checks run too: ContentClassifier pointers
against the resource's schema, and each collector a BindingPolicy applies typed against the
resources its clauses name.

Exit status: 0 when every object is valid (warnings allowed), 1 when any is not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "files or folders to check (repeatable; - reads stdin)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "descend into sub-folders of the given folders")
	f.StringVar(&o.schemas, "schemas", "", "folder of OpenAPI v3 documents and CRDs for the schema-aware checks")
	f.StringVarP(&o.output, "output", "o", "", "output format: (text), json or yaml")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// document is one YAML or JSON document of an input file, converted to JSON.
type document struct {
	file  string
	index int // 1-based position in the file
	json  []byte
}

// validateResult is what `statusfold validate -o json|yaml` prints per object.
type validateResult struct {
	File     string        `json:"file"`
	Document int           `json:"document"`
	Kind     string        `json:"kind"`
	Name     string        `json:"name,omitempty"`
	Valid    bool          `json:"valid"`
	Errors   []resultError `json:"errors,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Hints say where a field that the apiserver does not know moved in KubeStellar.
	Hints   []string `json:"hints,omitempty"`
	message string   // the error as kubectl prints it
}

type resultError struct {
	Field   string `json:"field,omitempty"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

func runValidate(ctx context.Context, out, errOut io.Writer, o *validateOptions) error {
	switch o.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("--output: unsupported format %q (want json or yaml)", o.output)
	}
	var docs []document
	for _, f := range o.files {
		d, err := readInputs(f, o.recursive)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	results, err := validateDocuments(ctx, docs, o.schemas)
	if err != nil {
		return err
	}
	invalid := 0
	for _, r := range results {
		if !r.Valid {
			invalid++
		}
	}
	if err := printValidateResults(out, errOut, o.output, results); err != nil {
		return err
	}
	if invalid > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d objects are invalid", invalid, len(results))}
	}
	return nil
}

// validateDocuments runs on each document of statusfold's kinds what `kubectl apply` of it
// causes in a cluster with statusfold installed, in the apiserver's order (see
// docs/admission.md): decoding with strict field validation, the CRD schema's defaults, the
// mutating webhook, the CRD schema's validation, and then — for objects the schema accepts —
// the validating webhook's checks (the same check.Checker). Each failure is the error the
// apiserver would return, printed as kubectl prints it.
func validateDocuments(ctx context.Context, docs []document, schemasDir string) ([]validateResult, error) {
	adm, err := offline.NewAdmission()
	if err != nil {
		return nil, err
	}
	type item struct {
		obj *offline.Object
		res validateResult
	}
	var items []item
	collectors := map[string]*controlv1alpha1.StatusCollector{}
	for _, d := range expandLists(docs) {
		o, ok := adm.Admit(ctx, d.file, d.json)
		if !ok {
			continue // not one of statusfold's kinds
		}
		if sc, ok := o.Typed.(*controlv1alpha1.StatusCollector); ok {
			collectors[sc.Name] = sc
		}
		items = append(items, item{obj: o, res: validateResult{File: d.file, Document: d.index, Kind: o.GVK.Kind, Name: o.Name}})
	}

	opts := check.Options{Collectors: check.CollectorGetterFunc(func(_ context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
		if sc, ok := collectors[name]; ok {
			return sc, nil
		}
		return nil, check.ErrUnknown
	})} // no Policies: the policies among the files get the schema-aware check themselves
	if schemasDir != "" {
		s, err := check.LoadSchemas(schemasDir)
		if err != nil {
			return nil, fmt.Errorf("--schemas: %w", err)
		}
		opts.Mapper, opts.Schemas = s, s
	}
	checker, err := check.New(opts)
	if err != nil {
		return nil, err
	}
	results := make([]validateResult, 0, len(items))
	for _, it := range items {
		it.obj.Check(ctx, checker)
		it.res.Warnings = it.obj.Warnings
		if err := it.obj.Err; err != nil {
			it.res.Errors = resultErrors(err)
			it.res.message = offline.Message(err)
			it.res.Hints = hints(it.res.message)
		}
		it.res.Valid = it.obj.Err == nil
		results = append(results, it.res)
	}
	return results, nil
}

// expandLists replaces each `kind: List` document (as `kubectl get -o yaml` writes) by its items.
func expandLists(docs []document) []document {
	var out []document
	for _, d := range docs {
		var list struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(d.json, &list) != nil || list.Kind != "List" || list.APIVersion != "v1" {
			out = append(out, d)
			continue
		}
		for _, it := range list.Items {
			out = append(out, document{file: d.file, index: d.index, json: it})
		}
	}
	return out
}

// resultErrors lists an apiserver error's field errors (the causes of an Invalid error), or the
// error itself with its reason as the type.
func resultErrors(err error) []resultError {
	var ce *offline.ClientError
	if errors.As(err, &ce) { // kubectl stops before it sends the object
		return []resultError{{Type: "ClientError", Message: offline.Message(err)}}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []resultError{{Type: "Error", Message: err.Error()}}
	}
	st := status.Status()
	if st.Reason == metav1.StatusReasonInvalid && st.Details != nil && len(st.Details.Causes) > 0 {
		out := make([]resultError, 0, len(st.Details.Causes))
		for _, c := range st.Details.Causes {
			out = append(out, resultError{Field: c.Field, Type: string(c.Type), Message: c.Message})
		}
		return out
	}
	return []resultError{{Type: string(st.Reason), Message: st.Message}}
}

// movedFields are fields of older KubeStellar releases that the apiserver reports as unknown,
// with where they are now.
var movedFields = []struct{ field, hint string }{
	{`unknown field "spec.wantSingletonReportedState"`,
		`spec.wantSingletonReportedState moved in KubeStellar 0.26: set wantSingletonReportedState on each downsync clause (spec.downsync[].wantSingletonReportedState)`},
	{`.statusCollection"`,
		`spec.downsync[].statusCollection is the pre-0.26 KubeStellar shape: list the collectors in the clause's statusCollectors (spec.downsync[].statusCollectors)`},
}

// hints says where the fields that an error reports as unknown moved.
func hints(message string) []string {
	var out []string
	for _, m := range movedFields {
		if strings.Contains(message, m.field) {
			out = append(out, m.hint)
		}
	}
	return out
}

// printValidateResults prints, like kubectl apply: warnings ("Warning: ...") and errors on
// errOut, one line per valid object on out; or everything as JSON/YAML on out.
func printValidateResults(out, errOut io.Writer, format string, results []validateResult) error {
	switch format {
	case "json", "yaml":
		if results == nil {
			results = []validateResult{}
		}
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		} else {
			b = append(b, '\n')
		}
		_, err = out.Write(b)
		return err
	}
	for _, r := range results {
		for _, w := range r.Warnings {
			fmt.Fprintf(errOut, "Warning: %s\n", w)
		}
		if r.Valid {
			fmt.Fprintf(out, "%s/%s valid (%s)\n", strings.ToLower(r.Kind), r.Name, r.File)
			continue
		}
		fmt.Fprintf(errOut, "error: %s: %s\n", r.File, r.message)
		for _, h := range r.Hints {
			fmt.Fprintf(errOut, "hint: %s\n", h)
		}
	}
	return nil
}

// readInputs reads the documents of a file, of stdin ("-"), or of the .yaml, .yml and .json
// files of a folder (sorted; sub-folders too when recursive).
func readInputs(path string, recursive bool) ([]document, error) {
	if path == "-" {
		return readDocuments("STDIN", os.Stdin)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return readFile(path)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var docs []document
	for _, f := range files {
		d, err := readFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

func readFile(path string) ([]document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDocuments(path, f)
}

// readDocuments splits a YAML stream (or one JSON document) into documents and converts each
// to JSON, rejecting duplicate keys; empty and comment-only documents are skipped.
func readDocuments(name string, r io.Reader) ([]document, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for i := 1; ; i++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if t := bytes.TrimSpace(js); string(t) == "null" || len(t) == 0 {
			continue
		}
		docs = append(docs, document{file: name, index: i, json: js})
	}
}

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/webhooks/check"
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
		Long: `Run the admission webhooks' checks offline. Every YAML or JSON document of the given files
(and of the .yaml, .yml and .json files of the given folders) is decoded strictly — an unknown,
misplaced or duplicate field is an error naming its path — and statusfold's kinds are checked exactly
as the webhooks check them: errors make "kubectl apply" fail, warnings are printed like kubectl
prints the webhooks' warnings. Other kinds are skipped. A BindingPolicy's collectors are looked up
among the given files.

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
	message  string        // kubectl-style error text
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

// kinds are the kinds `validate` checks, with how to decode each.
var validatedKinds = map[schema.GroupVersionKind]func() any{
	controlv1alpha1.GroupVersion.WithKind("StatusCollector"):   func() any { return &controlv1alpha1.StatusCollector{} },
	controlv1alpha1.GroupVersion.WithKind("ContentClassifier"): func() any { return &controlv1alpha1.ContentClassifier{} },
	controlv1alpha1.GroupVersion.WithKind("BindingPolicy"):     func() any { return &controlv1alpha1.BindingPolicy{} },
	policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"):  func() any { return &policyv1alpha1.AggregationPolicy{} },
}

// validateDocuments decodes the documents of statusfold's kinds strictly and checks them with
// the webhooks' Checker.
func validateDocuments(ctx context.Context, docs []document, schemasDir string) ([]validateResult, error) {
	type decoded struct {
		doc  document
		obj  any
		res  validateResult
		fail bool
	}
	var items []decoded
	collectors := map[string]*controlv1alpha1.StatusCollector{}
	for _, d := range expandLists(docs) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(d.json, &meta); err != nil {
			continue // not an object (e.g. a bare list or string): not one of our kinds
		}
		gv, _ := schema.ParseGroupVersion(meta.APIVersion)
		newObj, ok := validatedKinds[gv.WithKind(meta.Kind)]
		if !ok {
			continue
		}
		it := decoded{doc: d, obj: newObj(), res: validateResult{File: d.file, Document: d.index, Kind: meta.Kind, Name: meta.Metadata.Name}}
		strictErrs, err := kjson.UnmarshalStrict(d.json, it.obj)
		if err == nil && len(strictErrs) > 0 {
			err = strictError(strictErrs)
		}
		if err != nil {
			it.fail = true
			it.res.Errors = []resultError{{Type: "StrictDecoding", Message: err.Error()}}
			it.res.message = fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", meta.Kind, gv.Version, meta.Kind, err)
		} else if sc, ok := it.obj.(*controlv1alpha1.StatusCollector); ok {
			collectors[sc.Name] = sc
		}
		items = append(items, it)
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
		if !it.fail {
			var errs field.ErrorList
			var warnings []string
			switch obj := it.obj.(type) {
			case *controlv1alpha1.StatusCollector:
				errs, warnings = checker.StatusCollector(ctx, obj)
			case *controlv1alpha1.ContentClassifier:
				errs, warnings = checker.ContentClassifier(obj)
			case *controlv1alpha1.BindingPolicy:
				errs, warnings = checker.BindingPolicy(ctx, obj)
			case *policyv1alpha1.AggregationPolicy:
				errs, warnings = checker.AggregationPolicy(ctx, obj)
			}
			it.res.Warnings = warnings
			for _, e := range errs {
				it.res.Errors = append(it.res.Errors, resultError{Field: e.Field, Type: string(e.Type), Message: e.ErrorBody()})
			}
			if len(errs) > 0 {
				it.res.message = check.InvalidMessage(it.res.Kind, it.res.Name, errs)
			}
		}
		it.res.Valid = len(it.res.Errors) == 0
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

// strictError joins strict-decoding problems the way the apiserver reports them, with a hint
// for KubeStellar's pre-0.26 `statusCollection` clause shape.
func strictError(errs []error) error {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		m := e.Error()
		if strings.HasSuffix(m, `.statusCollection"`) {
			m += " (the pre-0.26 KubeStellar shape: list the collectors in the clause's statusCollectors)"
		}
		msgs = append(msgs, m)
	}
	return errors.New("strict decoding error: " + strings.Join(msgs, ", "))
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

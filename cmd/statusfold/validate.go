package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

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

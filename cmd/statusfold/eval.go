package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/objview"
	"github.com/statusfold/statusfold/policy/sizebudget"
	"github.com/statusfold/statusfold/webhooks/offline"
)

type evalOptions struct {
	collectors []string
	object     string
	wecs       []string
	labels     []string
	updated    []string
	output     string
}

func newEvalCommand() *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval --collector FILE... --object FILE --wec NAME[=FILE]... [-o yaml|json|table]",
		Short: "Evaluate StatusCollectors offline, printing the CombinedStatus results",
		Long: `eval evaluates StatusCollectors over the reported state of one workload object, offline and with
the same engine as the manager, and prints the results exactly as the CombinedStatus would hold them.

--collector FILE holds one or more StatusCollector documents (YAML or JSON); repeatable. An invalid
collector is reported with the same field errors as the admission webhook gives, and exit status 1.
--object FILE is the workload object in the WDS (its .status is ignored, as collectors see the object
without it). Each --wec NAME=FILE is one destination WEC: FILE is any YAML or JSON document whose
.status is that WEC's reported state (a WorkStatus, or the WEC's copy of the object); NAME alone is a
destination that has reported nothing. --wec-labels NAME=k=v,... sets a WEC's inventory labels and
--wec-updated NAME=RFC3339 its propagation.lastReturnedUpdateTimestamp (eval has no clock, so a WEC
without it has no timestamp).`,
		Example: `  statusfold eval --collector collectors.yaml --object deployment.yaml \
    --wec cluster1=ws1.yaml --wec cluster2=ws2.yaml --wec cluster3 \
    --wec-labels cluster1=region=eu --wec-updated cluster1=2024-11-07T20:15:27Z -o table`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEval(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.collectors, "collector", nil, "a file of StatusCollector documents; repeatable")
	f.StringVar(&o.object, "object", "", "the workload object in the WDS (YAML or JSON file)")
	f.StringArrayVar(&o.wecs, "wec", nil, "a destination WEC: NAME=FILE (a document whose .status is its reported state), or NAME for one that reported nothing; repeatable")
	f.StringArrayVar(&o.labels, "wec-labels", nil, "a WEC's inventory labels: NAME=key=value,key=value; repeatable")
	f.StringArrayVar(&o.updated, "wec-updated", nil, "a WEC's last returned update time: NAME=RFC3339; repeatable")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml, json or table")
	_ = cmd.MarkFlagRequired("collector")
	_ = cmd.MarkFlagRequired("object")
	return cmd
}

func runEval(out, errOut io.Writer, o *evalOptions) error {
	switch o.output {
	case "yaml", "json", "table":
	default:
		return fmt.Errorf("--output %q: want yaml, json or table", o.output)
	}
	compiler, err := collector.NewCompiler()
	if err != nil {
		return err
	}
	adm, err := offline.NewAdmission()
	if err != nil {
		return err
	}
	var cols []*collector.Collector
	var invalid []string
	for _, file := range o.collectors {
		scs, err := loadStatusCollectors(context.Background(), adm, file)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		for _, sc := range scs {
			col, errs, warnings := compiler.Compile(sc)
			for _, w := range warnings {
				fmt.Fprintf(errOut, "Warning: StatusCollector %q: %s\n", sc.Name, w)
			}
			if len(errs) > 0 {
				msg := fmt.Sprintf("StatusCollector %q is invalid:", sc.Name)
				for _, e := range errs {
					msg += "\n* " + e.Error()
				}
				invalid = append(invalid, msg)
				continue
			}
			cols = append(cols, col)
		}
	}
	if len(invalid) > 0 {
		return &exitError{code: 1, err: errors.New(strings.Join(invalid, "\n"))}
	}

	obj, err := loadDocument(o.object)
	if err != nil {
		return err
	}
	obj = objview.Of(obj)
	wecs, err := evalWECs(o)
	if err != nil {
		return err
	}
	results := collector.Evaluate(obj, wecs, cols)
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "table":
		return printResultTables(out, results)
	}
	b, err := yaml.Marshal(results)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// loadStatusCollectors reads every StatusCollector document of a file as `statusfold validate`
// does (admitFile); the validating webhook's checks are the compiler's, in runEval.
func loadStatusCollectors(ctx context.Context, adm *offline.Admission, path string) ([]*controlv1alpha1.StatusCollector, error) {
	objs, err := admitFile(ctx, adm, path, controlv1alpha1.GroupVersion.WithKind("StatusCollector"))
	if err != nil {
		return nil, err
	}
	out := make([]*controlv1alpha1.StatusCollector, len(objs))
	for i, o := range objs {
		out[i] = o.(*controlv1alpha1.StatusCollector)
	}
	return out, nil
}

// evalWECs builds the destination WECs from --wec, --wec-labels and --wec-updated.
func evalWECs(o *evalOptions) ([]collector.WEC, error) {
	var wecs []collector.WEC
	index := map[string]int{}
	for _, arg := range o.wecs {
		name, file, hasFile := strings.Cut(arg, "=")
		if name == "" || (hasFile && file == "") {
			return nil, fmt.Errorf("--wec %q: want NAME=FILE or NAME", arg)
		}
		if _, dup := index[name]; dup {
			return nil, fmt.Errorf("--wec %q: WEC %q given twice", arg, name)
		}
		w := collector.WEC{Name: name}
		if hasFile {
			doc, err := loadDocument(file)
			if err != nil {
				return nil, err
			}
			w.Status = doc["status"]
		}
		index[name] = len(wecs)
		wecs = append(wecs, w)
	}
	lookup := func(flag, arg string) (*collector.WEC, string, error) {
		name, value, ok := strings.Cut(arg, "=")
		i, known := index[name]
		if !ok || !known {
			return nil, "", fmt.Errorf("--%s %q: want NAME=... for a WEC given with --wec", flag, arg)
		}
		return &wecs[i], value, nil
	}
	for _, arg := range o.labels {
		w, value, err := lookup("wec-labels", arg)
		if err != nil {
			return nil, err
		}
		w.Labels = map[string]string{}
		for _, kv := range strings.Split(value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--wec-labels %q: want NAME=key=value,key=value", arg)
			}
			w.Labels[k] = v
		}
	}
	for _, arg := range o.updated {
		w, value, err := lookup("wec-updated", arg)
		if err != nil {
			return nil, err
		}
		ts, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return nil, fmt.Errorf("--wec-updated %q: %w", arg, err)
		}
		w.LastUpdate = &ts
	}
	return wecs, nil
}

// printResultTables prints each result as an aligned table, for people.
func printResultTables(out io.Writer, results []controlv1alpha1.NamedStatusCombination) error {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s:\n", r.Name)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(r.ColumnNames, "\t"))
		for _, row := range r.Rows {
			cells := make([]string, len(row.Columns))
			for k, v := range row.Columns {
				cells[k] = cellText(v)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, e := range r.RowErrors {
			col := e.ColumnName
			if col == controlv1alpha1.FilterColumnName {
				col = "(filter)"
			}
			fmt.Fprintf(out, "  error: wec %s, column %s: %s\n", e.WEC.ClusterId, col, e.Error)
		}
		for _, e := range r.AggregationErrors {
			if sizebudget.IsMarker(e) {
				fmt.Fprintf(out, "  TRIMMED: %s\n", e.Error)
				continue
			}
			fmt.Fprintf(out, "  aggregation error: row %d, column %s: %s (%d values skipped)\n", e.Row+1, e.ColumnName, e.Error, e.Count)
		}
	}
	return nil
}

// cellText renders a value for a table cell: scalars as text, null as <null>, arrays and objects
// as compact JSON.
func cellText(v controlv1alpha1.Value) string {
	switch v.Type {
	case controlv1alpha1.TypeNull:
		return "<null>"
	case controlv1alpha1.TypeString:
		return *v.String
	case controlv1alpha1.TypeNumber:
		return *v.Number
	}
	b, err := json.Marshal(collector.PlainValue(v))
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

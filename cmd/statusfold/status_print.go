package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/policy/sizebudget"
)

// printStatus prints the report in format: table (the default, for people), yaml or json.
func printStatus(out io.Writer, r *statusReport, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "table", "":
		printStatusTables(out, r)
		return nil
	}
	return fmt.Errorf("unknown output format %q (table, yaml or json)", format)
}

// printStatusTables prints the report for people: the object, whether status is returned and its
// health, its .status, the WECs table and each CombinedStatus's results as tables.
func printStatusTables(out io.Writer, r *statusReport) {
	o := r.Object
	id := o.Name
	if o.Namespace != "" {
		id = o.Namespace + "/" + o.Name
	}
	group := o.Group
	if group == "" {
		group = "core"
	}
	fmt.Fprintf(out, "%s %s (%s/%s, generation %d)\n", o.Kind, id, group, o.Version, o.Generation)
	if r.ExecutingCount != "" {
		wecs := "WECs"
		if r.ExecutingCount == "1" {
			wecs = "WEC"
		}
		fmt.Fprintf(out, "Executing in %s %s; statusfold returns their reported state into .status\n", r.ExecutingCount, wecs)
	} else {
		fmt.Fprintln(out, "No status return requested (no kubestellar.io/executing-count label)")
	}
	if r.Health != nil {
		fmt.Fprintf(out, "Health: %s%s (check: %s)\n", r.Health.Status, suffix(r.Health.Message), r.HealthCheck)
	}
	fmt.Fprintf(out, "Aggregation rule: %s\n", r.Rule)

	if msg := trimmedStatus(r.Status); msg != "" {
		fmt.Fprintf(out, "TRIMMED: %s\n", msg)
	}

	fmt.Fprintln(out, "\nSTATUS (.status in the WDS)")
	if len(r.Status) == 0 {
		fmt.Fprintln(out, "  (empty)")
	} else {
		printStatusMap(out, r.Status)
	}

	fmt.Fprintln(out, "\nWECS")
	printWECTable(out, r.WECs)

	for _, cs := range r.Combined {
		fmt.Fprintf(out, "\nCOMBINEDSTATUS %s (BindingPolicy %s)\n", cs.Name, cs.BindingPolicy)
		// The same tables as `statusfold eval`.
		_ = printResultTables(out, cs.Results)
	}
	if len(r.Combined) == 0 {
		fmt.Fprintln(out, "\nNo CombinedStatus (no BindingPolicy that selects this object names a StatusCollector)")
	}
}

// printWECTable prints one row per WEC: its health, the generation it reported (and whether it
// applied it), when it reported and the health message; "not yet" for a WEC without a report.
func printWECTable(out io.Writer, wecs []wecReport) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WEC\tHEALTH\tGENERATION\tREPORTED\tMESSAGE")
	for _, w := range wecs {
		if !w.Reported {
			fmt.Fprintf(tw, "%s\t-\t-\tnot yet\t\n", w.Name)
			continue
		}
		h, msg := "-", ""
		if w.Health != nil {
			h, msg = string(w.Health.Status), w.Health.Message
		}
		gen := fmt.Sprintf("%d", w.LastGeneration)
		if !w.Applied {
			gen += " (not applied)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Name, h, gen, orDash(w.Updated), msg)
	}
	if len(wecs) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
	tw.Flush()
}

// printStatusMap prints scalar fields as "key: value" and conditions as a table; other nested
// values as compact JSON.
func printStatusMap(out io.Writer, st map[string]any) {
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "conditions" {
			continue
		}
		fmt.Fprintf(out, "  %s: %s\n", k, compactJSON(st[k]))
	}
	conds, _ := st["conditions"].([]any)
	if len(conds) == 0 {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(tw, "  %v\t%v\t%v\t%v\n", m["type"], m["status"], orDash(str(m["reason"])), str(m["message"]))
	}
	tw.Flush()
}

func compactJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return " — " + msg
}

// trimmedStatus is the message of the condition by which a returned status says it was trimmed
// or not returned for the object size budget (docs/rules.md "Size budget"), or "".
func trimmedStatus(st map[string]any) string {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); (t == sizebudget.ConditionTrimmed || t == sizebudget.ConditionReturned) && m["reason"] == sizebudget.ReasonOverBudget {
			return fmt.Sprintf("%s=%v: %v", t, m["status"], m["message"])
		}
	}
	return ""
}

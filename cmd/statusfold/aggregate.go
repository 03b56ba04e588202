package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/webhooks/offline"
)

type aggregateOptions struct {
	object  string
	wecs    []string
	policy  string
	output  string
	explain bool
	lua     string
}

func newAggregateCommand() *cobra.Command {
	o := &aggregateOptions{}
	cmd := &cobra.Command{
		Use:   "aggregate --object FILE --wec NAME=FILE... [--policy FILE] [-o yaml|json] [--explain]",
		Short: "Print the .status statusfold would write into a workload object (copy for one WEC, aggregate for more)",
		Long: `aggregate computes, offline and with the same engine as the manager, the .status that statusfold
writes into a workload object in the WDS: a copy of the WEC's reported state for one WEC, the
kind's Rego aggregate for several.

--object is the WDS object (YAML or JSON); its metadata.generation matters. Each --wec NAME=FILE is
one WEC: when FILE is a WorkStatus, its status and statusDetails are used exactly as the controller
uses them; any other document is the WEC's object, its .status the reported state, taken as having
applied the WDS object's current generation (its metadata.generation, when present, is the WEC copy's
generation). NAME alone is a WEC that has reported nothing. --policy FILE is an AggregationPolicy to
use instead of the built-in module of its kind. Kinds with an Argo CD Lua health check (Argo CD's own,
or one in the --lua-health ConfigMap) are aggregated as the worst WEC by that check. --explain adds
the rule that made the aggregate and Argo CD's health of each WEC and of the result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAggregate(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.object, "object", "", "the workload object in the WDS (YAML or JSON file)")
	f.StringArrayVar(&o.wecs, "wec", nil, "a WEC: NAME=FILE (a WorkStatus or the WEC's object), or NAME for one that reported nothing; repeatable")
	f.StringVar(&o.policy, "policy", "", "an AggregationPolicy file overriding the built-in module of its kind")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	f.BoolVar(&o.explain, "explain", false, "also print the rule in force and Argo CD's health of each WEC and of the result")
	f.StringVar(&o.lua, "lua-health", "", luaHealthFlagHelp)
	_ = cmd.MarkFlagRequired("object")
	return cmd
}

// loadDocument reads one YAML or JSON document into a JSON-like map (integers as int64).
func loadDocument(path string) (map[string]any, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not an object: %w", path, err)
	}
	return aggregation.NormalizeNumbers(m).(map[string]any), nil
}

func groupKindOf(obj map[string]any) schema.GroupKind {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
}

func generationOf(obj map[string]any) (int64, bool) {
	md, _ := obj["metadata"].(map[string]any)
	g, ok := md["generation"].(int64)
	return g, ok
}

// loadWEC turns one --wec argument into a WEC.
func loadWEC(arg string, wdsGeneration int64) (aggregation.WEC, error) {
	name, file, hasFile := strings.Cut(arg, "=")
	if name == "" {
		return aggregation.WEC{}, fmt.Errorf("--wec %q: want NAME=FILE or NAME", arg)
	}
	w := aggregation.WEC{Name: name}
	if !hasFile {
		return w, nil
	}
	doc, err := loadDocument(file)
	if err != nil {
		return w, err
	}
	if groupKindOf(doc) == (schema.GroupKind{Group: controlv1alpha1.GroupVersion.Group, Kind: "WorkStatus"}) {
		raw, _ := json.Marshal(doc)
		var ws controlv1alpha1.WorkStatus
		if err := json.Unmarshal(raw, &ws); err != nil {
			return w, fmt.Errorf("%s: %w", file, err)
		}
		d := ws.StatusDetails
		w.Details = &d
	} else {
		d := &controlv1alpha1.StatusDetails{LastGeneration: wdsGeneration, LastGenerationIsApplied: true}
		if g, ok := generationOf(doc); ok {
			d.WECGeneration = &g
		}
		w.Details = d
	}
	if st, ok := doc["status"].(map[string]any); ok {
		w.Status = st
	}
	return w, nil
}

func runAggregate(out, warn io.Writer, o *aggregateOptions) error {
	if o.output != "yaml" && o.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", o.output)
	}
	obj, err := loadDocument(o.object)
	if err != nil {
		return err
	}
	gk := groupKindOf(obj)
	gen, _ := generationOf(obj)
	e, err := luaEngine(o.lua, warn)
	if err != nil {
		return err
	}
	if o.policy != "" {
		adm, err := offline.NewAdmission()
		if err != nil {
			return err
		}
		objs, err := admitFile(context.Background(), adm, o.policy, policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"))
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		if len(objs) != 1 {
			return fmt.Errorf("%s: want one AggregationPolicy, got %d", o.policy, len(objs))
		}
		p := objs[0].(*policyv1alpha1.AggregationPolicy)
		if errs := e.SetPolicy(p); len(errs) > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%s: AggregationPolicy %q is invalid: %w", o.policy, p.Name, errs.ToAggregate())}
		}
		if target := (schema.GroupKind{Group: p.Spec.Target.Group, Kind: p.Spec.Target.Kind}); target != gk {
			return fmt.Errorf("%s: the policy targets %s, the object is a %s", o.policy, target, gk)
		}
	}
	wecs := make([]aggregation.WEC, 0, len(o.wecs))
	for _, arg := range o.wecs {
		w, err := loadWEC(arg, gen)
		if err != nil {
			return err
		}
		wecs = append(wecs, w)
	}
	status, err := e.Returned(gk, obj, wecs)
	if err != nil {
		return err
	}
	var doc any = status
	if o.explain {
		ex, err := explain(e, gk, obj, wecs, status)
		if err != nil {
			return err
		}
		doc = map[string]any{"status": status, "explain": ex}
	}
	var b []byte
	if o.output == "json" {
		b, err = json.MarshalIndent(doc, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(doc)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// explain reports the rule that made the aggregate, and Argo CD's health (by the kind's Lua check,
// else its check in Go) of each WEC (its copy, as Argo CD would see it in the WDS) and of the result.
func explain(e *aggregation.Engine, gk schema.GroupKind, obj map[string]any, wecs []aggregation.WEC, status map[string]any) (map[string]any, error) {
	rule := map[string]any{"name": e.Rule(gk), "healthCheck": e.HealthCheck(gk)}
	if e.HealthCheck(gk) == "" {
		return map[string]any{"rule": rule, "note": fmt.Sprintf("Argo CD has no health check for %s", gk)}, nil
	}
	judge := func(st map[string]any) (map[string]any, error) {
		o := make(map[string]any, len(obj)+1)
		for k, v := range obj {
			o[k] = v
		}
		if st != nil {
			o["status"] = st
		}
		r, _ := e.Health(gk, o)
		h := map[string]any{"health": string(r.Status)}
		if r.Message != "" {
			h["message"] = r.Message
		}
		return h, nil
	}
	var per []any
	var worst []health.Status
	for _, w := range wecs {
		copied, err := e.Returned(gk, obj, []aggregation.WEC{w})
		if err != nil {
			return nil, err
		}
		h, err := judge(copied)
		if err != nil {
			return nil, err
		}
		h["name"] = w.Name
		if w.Status == nil {
			h["reported"] = false
		}
		per = append(per, h)
		if v := h["health"].(string); v != "" { // no verdict is not a WEC's health
			worst = append(worst, health.Status(v))
		}
	}
	agg, err := judge(status)
	if err != nil {
		return nil, err
	}
	agg["worstWEC"] = string(health.Worst(worst...))
	return map[string]any{"rule": rule, "wecs": per, "result": agg}, nil
}

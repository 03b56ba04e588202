package hostile

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
)

// aggregation runs the built-in modules, or the case's policy, over the case's WECs.
func (r *runner) aggregation(t *testing.T, c Case) {
	eng, ok := r.aggregationEngine(t, c)
	if !ok {
		return
	}
	group, kind, ok := strings.Cut(c.Target, "/")
	if !ok || kind == "" {
		t.Fatalf("%s: target %q is not group/kind", c.file, c.Target)
	}
	obj := c.Workload
	if obj == nil {
		obj = map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(1)}}
	}
	got, err := eng.Returned(schema.GroupKind{Group: group, Kind: kind}, obj, aggregationWECs(t, c))
	checkReturned(t, c, got, err)
}

// aggregationEngine is the engine the case runs on: the built-in modules, or an engine with the
// case's policy. ok is false when the case ends with the policy's errors (checked, or the
// admission's rejection the case allows).
func (r *runner) aggregationEngine(t *testing.T, c Case) (eng *aggregation.Engine, ok bool) {
	if c.Policy == nil {
		return r.agg, true
	}
	var p policyv1alpha1.AggregationPolicy
	if err := into(c.Policy, &p); err != nil {
		t.Fatalf("%s: policy: %v", c.file, err)
	}
	eng, err := aggregation.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	errs := eng.SetPolicy(&p)
	if len(c.Expect.Errors) > 0 {
		checkErrors(t, errs, c.Expect.Errors)
		return nil, false
	}
	if len(errs) > 0 && c.Expect.MayReject {
		t.Logf("policy rejected at admission: %v", errs)
		return nil, false
	}
	if len(errs) > 0 {
		t.Fatalf("policy rejected: %v", errs)
	}
	return eng, true
}

// aggregationWECs are the case's WECs as the aggregation engine takes them.
func aggregationWECs(t *testing.T, c Case) []aggregation.WEC {
	var wecs []aggregation.WEC
	for _, w := range c.WECs {
		status := w.Status
		if w.StatusJSON != "" {
			if err := json.Unmarshal([]byte(w.StatusJSON), &status); err != nil {
				t.Fatalf("%s: wec %s statusJSON: %v", c.file, w.Name, err)
			}
		}
		aw := aggregation.WEC{Name: w.Name}
		if status != nil {
			m, ok := status.(map[string]any)
			if !ok {
				t.Fatalf("%s: wec %s: an aggregation status must be a map", c.file, w.Name)
			}
			aw.Status = m
		}
		if w.Details != nil {
			aw.Details = &controlv1alpha1.StatusDetails{}
			if err := into(w.Details, aw.Details); err != nil {
				t.Fatalf("%s: wec %s details: %v", c.file, w.Name, err)
			}
		}
		wecs = append(wecs, aw)
	}
	return wecs
}

// checkReturned checks what the engine returned (got, err) against the case's expectations.
func checkReturned(t *testing.T, c Case, got map[string]any, err error) {
	text := ""
	switch {
	case err != nil:
		text = err.Error()
		if c.Expect.Error == "" {
			t.Errorf("Returned failed: %v", err)
		} else if !containsOneOf(text, c.Expect.Error) {
			t.Errorf("Returned error %q, want it to contain %q", text, c.Expect.Error)
		}
	default:
		if c.Expect.Error != "" {
			t.Errorf("Returned succeeded, want an error containing %q", c.Expect.Error)
		}
		// What goes into .status must encode as JSON.
		b, jerr := json.Marshal(got)
		if jerr != nil {
			t.Errorf("the returned status does not encode as JSON: %v", jerr)
		}
		text = string(b)
		if c.Expect.Nothing != (got == nil) {
			t.Errorf("Returned = %s, want nothing: %v", text, c.Expect.Nothing)
		}
	}
	for _, want := range c.Expect.Contains {
		if !strings.Contains(text, want) {
			t.Errorf("result %.400s does not contain %q", text, want)
		}
	}
	for _, bad := range c.Expect.NotContains {
		if strings.Contains(text, bad) {
			t.Errorf("result %.400s contains %q", text, bad)
		}
	}
}

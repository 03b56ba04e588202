package hostile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// runCLICases runs the cases through the CLI: every StatusCollector and AggregationPolicy through
// `statusfold validate` (refused or accepted as at admission), the accepted collectors through
// `statusfold eval` and the accepted policies that have WECs through `statusfold aggregate`, over
// the case's WECs. Each run must end within twice its limit, its peak resident memory at most
// entryHeap above a trivial run's (each sampled every 2 ms from /proc).
func runCLICases(t *testing.T, cases []entryCase) *worst {
	dir := t.TempDir()
	w := &worst{}
	trivial := writeJSON(t, dir, "trivial.json", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}})
	// The baseline: a run that checks nothing.
	w.baseline = runCLI(t, "validate", "-f", trivial).peak
	for _, c := range cases {
		if c.object == nil {
			continue
		}
		file := writeJSON(t, dir, c.name+".json", c.clusterObject().Object)
		r := runCLI(t, "validate", "-f", file)
		w.add(c, !r.ok, r.time, growth(r.peak, w.baseline))
		if err := c.checkRefusal(r.out, !r.ok); err != nil {
			t.Errorf("%s (%s) in statusfold validate: %v", c.Name, c.file, err)
		}
		checkBounds(t, c.Name+" in statusfold validate", r.time, admissionLimit, growth(r.peak, w.baseline))
		if !r.ok || len(c.WECs) == 0 && c.kind == kindPolicy {
			continue
		}
		args, limit := cliEvalArgs(t, dir, c, file)
		r = runCLI(t, args...)
		w.add(c, false, r.time, growth(r.peak, w.baseline))
		checkBounds(t, c.Name+" in statusfold "+args[0], r.time, limit, growth(r.peak, w.baseline))
		if c.kind == kindPolicy && !r.ok && (c.Expect.Error == "" || !containsOneOf(r.out, c.Expect.Error)) {
			t.Errorf("%s (%s) in statusfold aggregate: %.600s; want an error containing %q", c.Name, c.file, r.out, c.Expect.Error)
		}
	}
	if w.cases < minEntryCases {
		t.Errorf("%d cases in the CLI, want at least %d", w.cases, minEntryCases)
	}
	return w
}

// cliEvalArgs are the arguments of `statusfold eval` (a collector) or `statusfold aggregate` (a
// policy) over the case's WECs, with the limit of that run: the collectors' time budget, or the
// policy's check and one object's evaluation.
func cliEvalArgs(t *testing.T, dir string, c entryCase, file string) ([]string, time.Duration) {
	obj := map[string]any{"metadata": map[string]any{"name": "x", "namespace": caseNamespace, "generation": 1}}
	for k, v := range c.Workload {
		obj[k] = v
	}
	obj["apiVersion"], obj["kind"] = "example.io/v1", "Widget"
	args := []string{"eval", "--collector", file}
	limit := collectorBudget
	if c.kind == kindPolicy {
		args, limit = []string{"aggregate", "--policy", file, "-o", "json"}, admissionLimit+evaluationLimit
	}
	args = append(args, "--object", writeJSON(t, dir, c.name+"-object.json", obj))
	for i, w := range c.WECs[:min(len(c.WECs), maxControllerWECs)] {
		raw, err := statusJSON(w)
		if err != nil || raw == nil {
			args = append(args, "--wec", wecName(i))
			continue
		}
		ws := map[string]any{"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "WorkStatus",
			"metadata": map[string]any{"name": "ws", "namespace": wecName(i)}, "status": json.RawMessage(raw),
			"statusDetails": map[string]any{"lastGeneration": 1, "lastGenerationIsApplied": true}}
		if w.Details != nil {
			ws["statusDetails"] = w.Details
		}
		args = append(args, "--wec", wecName(i)+"="+writeJSON(t, dir, c.name+"-"+wecName(i)+".json", ws))
	}
	if len(c.WECs) == 0 {
		args = append(args, "--wec", wecName(0))
	}
	return args, limit
}

// writeJSON writes v as JSON (which the CLI reads as YAML) into dir/name and returns the path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

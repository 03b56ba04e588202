package kscompat

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

var (
	speedFlag       = flag.Bool("kscompat.speed", false, "run TestSpeed and TestEndToEndLatency (benchmarks; not part of `make test`)")
	speedGOMAXPROCS = flag.Int("kscompat.gomaxprocs", 1, "GOMAXPROCS of TestSpeed's benchmark processes")
)

// KubeStellar's collector evaluation, as pkg/status of v0.30.0 does it (its types are unexported,
// so the code is copied here, trimmed to what the benchmark collector uses: filter, groupBy, COUNT
// and SUM): one CEL environment with obj, returned, inventory and propagation as maps; every
// evaluation parses, checks and plans its expression before running it; a WEC's values are
// cached, and the result is aggregated from the cache of every WEC. This module builds it with the
// cel-go version KubeStellar requires (v0.22).

type ksEvaluator struct{ env *cel.Env }

func newKSEvaluator() (*ksEvaluator, error) {
	env, err := cel.NewEnv(
		cel.Variable("obj", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("returned", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("inventory", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("propagation", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		return nil, err
	}
	return &ksEvaluator{env: env}, nil
}

func (e *ksEvaluator) evaluate(expression ksv1alpha1.Expression, objMap map[string]any) (ref.Val, error) {
	ast, issues := e.env.Parse(string(expression))
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("failed to parse expression: %w", issues.Err())
	}
	checked, issues := e.env.Check(ast)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("failed to check expression: %w", issues.Err())
	}
	prog, err := e.env.Program(checked)
	if err != nil {
		return nil, fmt.Errorf("failed to create program: %w", err)
	}
	result, _, err := prog.Eval(objMap)
	if err != nil {
		return nil, fmt.Errorf("failed to evaluate expression: %w", err)
	}
	return result, nil
}

type ksWECData struct {
	groupByEval, combinedFieldsEval map[string]ref.Val
	evalErrors                      []ksv1alpha1.ErrorInColumn
}

// ksEvaluateWEC is evaluateWorkStatusAgainstStatusCollectorWriteLocked for filter, groupBy and
// combinedFields.
func ksEvaluateWEC(e *ksEvaluator, spec *ksv1alpha1.StatusCollectorSpec, cache map[string]*ksWECData, wec string, content map[string]any) {
	var evalErrors []ksv1alpha1.ErrorInColumn
	if spec.Filter != nil {
		eval, err := e.evaluate(*spec.Filter, content)
		if err != nil {
			evalErrors = append(evalErrors, ksv1alpha1.ErrorInColumn{Error: err.Error()})
		} else if tn := eval.Type().TypeName(); tn == "bool" && !eval.Value().(bool) {
			delete(cache, wec)
			return
		}
	}
	d := cache[wec]
	if d == nil {
		d = &ksWECData{}
		cache[wec] = d
	}
	groupBy := map[string]ref.Val{}
	for _, g := range spec.GroupBy {
		eval, err := e.evaluate(g.Def, content)
		if err != nil {
			evalErrors = append(evalErrors, ksv1alpha1.ErrorInColumn{ColumnName: g.Name, Error: err.Error()})
			eval = celtypes.DefaultTypeAdapter.NativeToValue(err.Error())
		}
		groupBy[g.Name] = eval
	}
	fields := map[string]ref.Val{}
	for _, f := range spec.CombinedFields {
		if f.Type == ksv1alpha1.AggregatorTypeCount {
			fields[f.Name] = nil
			continue
		}
		eval, err := e.evaluate(*f.Subject, content)
		if err != nil {
			evalErrors = append(evalErrors, ksv1alpha1.ErrorInColumn{ColumnName: f.Name, Error: err.Error()})
			eval = celtypes.DefaultTypeAdapter.NativeToValue(err.Error())
		}
		fields[f.Name] = eval
	}
	d.groupByEval, d.combinedFieldsEval, d.evalErrors = groupBy, fields, evalErrors
}

// ksAggregate is handleAggregationReadLocked + calculateCombinedResult for COUNT and SUM.
func ksAggregate(spec *ksv1alpha1.StatusCollectorSpec, cache map[string]*ksWECData) []ksv1alpha1.StatusCombinationRow {
	type group struct {
		key  map[string]ref.Val
		rows []map[string]ref.Val
	}
	ids, next := map[any]int{}, 0
	groups := map[string]*group{}
	for _, d := range cache {
		if len(d.evalErrors) > 0 {
			continue
		}
		tuple := make([]string, 0, len(spec.GroupBy))
		for _, g := range spec.GroupBy {
			v := d.groupByEval[g.Name].Value()
			id, ok := ids[v]
			if !ok {
				id, ids[v] = next, next
				next++
			}
			tuple = append(tuple, strconv.Itoa(id))
		}
		k := strings.Join(tuple, ",")
		if groups[k] == nil {
			groups[k] = &group{key: d.groupByEval}
		}
		groups[k].rows = append(groups[k].rows, d.combinedFieldsEval)
	}
	var out []ksv1alpha1.StatusCombinationRow
	for _, g := range groups {
		var row ksv1alpha1.StatusCombinationRow
		for _, gb := range spec.GroupBy {
			s := fmt.Sprint(g.key[gb.Name].Value())
			row.Columns = append(row.Columns, ksv1alpha1.Value{Type: ksv1alpha1.TypeString, String: &s})
		}
		for _, f := range spec.CombinedFields {
			var n string
			if f.Type == ksv1alpha1.AggregatorTypeCount {
				n = strconv.Itoa(len(g.rows))
			} else {
				total := 0.0
				for _, r := range g.rows {
					if v, ok := r[f.Name].Value().(int64); ok {
						total += float64(v)
					}
				}
				n = strconv.FormatFloat(total, 'g', -1, 64)
			}
			row.Columns = append(row.Columns, ksv1alpha1.Value{Type: ksv1alpha1.TypeNumber, Number: &n})
		}
		out = append(out, row)
	}
	return out
}

// The benchmark rows and collector: the same as policy/collector's BenchmarkKubeStellarRows.
func speedStatus(i int, ready int64) map[string]any {
	regions := []string{"ap", "eu", "sa", "us"}
	return map[string]any{"replicas": int64(3), "readyReplicas": ready, "availableReplicas": ready, "region": regions[i%len(regions)]}
}

func speedSpec() *ksv1alpha1.StatusCollectorSpec {
	return &statusCollector("by-region", filter("returned.status.readyReplicas > 0"),
		groupBy("region", "returned.status.region"), count("count"),
		agg("available", aggSum, "returned.status.availableReplicas")).Spec
}

// speedContent is the content map KubeStellar builds for a WEC when only `returned` is queried.
func speedContent(status map[string]any) map[string]any {
	return map[string]any{"returned": map[string]any{"status": status}}
}

func BenchmarkKubeStellarEval(b *testing.B) {
	e, err := newKSEvaluator()
	if err != nil {
		b.Fatal(err)
	}
	spec := speedSpec()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("full/wecs=%d", n), func(b *testing.B) {
			for b.Loop() {
				cache := map[string]*ksWECData{}
				for i := range n {
					ksEvaluateWEC(e, spec, cache, fmt.Sprintf("wec-%05d", i), speedContent(speedStatus(i, int64(i%5))))
				}
				if rows := ksAggregate(spec, cache); len(rows) != 4 {
					b.Fatalf("unexpected rows %v", rows)
				}
			}
		})
	}
	const n = 10000
	cache := map[string]*ksWECData{}
	for i := range n {
		ksEvaluateWEC(e, spec, cache, fmt.Sprintf("wec-%05d", i), speedContent(speedStatus(i, int64(i%5))))
	}
	i := 0
	b.Run(fmt.Sprintf("update/wecs=%d", n), func(b *testing.B) {
		for b.Loop() {
			i++
			ksEvaluateWEC(e, spec, cache, fmt.Sprintf("wec-%05d", i%n), speedContent(speedStatus(i%n, int64(1+i%4))))
			if rows := ksAggregate(spec, cache); len(rows) != 4 {
				b.Fatalf("unexpected rows %v", rows)
			}
		}
	})
}

var benchLine = regexp.MustCompile(`^Benchmark\S+?/(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// runBench runs one benchmark binary once and returns ns/op by sub-benchmark name.
func runBench(t *testing.T, bin, dir, bench string, want int) map[string]float64 {
	t.Helper()
	// -test.short: TestMain then builds no statusfold binary; no test runs anyway.
	cmd := exec.Command(bin, "-test.short", "-test.run=^$", "-test.bench=^"+bench+"$", "-test.benchtime=1s", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", *speedGOMAXPROCS))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -test.bench %s: %v\n%s", bin, bench, err, out)
	}
	res := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := benchLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			res[m[1]] = v
		}
	}
	if len(res) != want {
		t.Fatalf("%s: want %d results, got %v from\n%s", bench, want, res, out)
	}
	return res
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestSpeed measures KubeStellar's evaluation code against statusfold's engine on the same rows and
// collector. One Go build cannot hold both cel-go versions (v0.22 in this module, v0.30 in
// statusfold), so it builds policy/collector's test binary and runs the two benchmark binaries
// alternately, five repetitions, each with GOMAXPROCS=1 (-kscompat.gomaxprocs), and reports
// medians and their ratios.
func TestSpeed(t *testing.T) {
	if !*speedFlag {
		t.Skip("benchmark: run with -kscompat.speed (make kscompat-speed)")
	}
	sfBin := filepath.Join(t.TempDir(), "collector.test")
	build := exec.Command("go", "test", "-c", "-o", sfBin, "./policy/collector")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building policy/collector's tests: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	const repetitions = 5
	ks, sf := map[string][]float64{}, map[string][]float64{}
	for range repetitions {
		for k, v := range runBench(t, self, wd, "BenchmarkKubeStellarEval", 3) {
			ks[k] = append(ks[k], v)
		}
		for k, v := range runBench(t, sfBin, filepath.Join(repoRoot(), "policy", "collector"), "BenchmarkKubeStellarRows", 5) {
			sf[k] = append(sf[k], v)
		}
	}
	ms := func(ns float64) string { return fmt.Sprintf("%.3f ms", ns/1e6) }
	var b strings.Builder
	fmt.Fprintf(&b, "medians of %d alternating repetitions, GOMAXPROCS=%d\n", repetitions, *speedGOMAXPROCS)
	fmt.Fprintf(&b, "| case | KubeStellar v0.30.0 | statusfold | ratio |\n|---|---|---|---|\n")
	for _, k := range []string{"full/wecs=1000", "full/wecs=10000", "update/wecs=10000"} {
		kv, sv := median(ks[k]), median(sf[k])
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f× |\n", k, ms(kv), ms(sv), kv/sv)
	}
	// statusfold evaluates this collector's expressions directly (field reads, a comparison with a
	// literal); full-cel is the same collector with equivalent expressions that all run in CEL.
	for _, n := range []string{"1000", "10000"} {
		kv, sv := median(ks["full/wecs="+n]), median(sf["full-cel/wecs="+n])
		fmt.Fprintf(&b, "| full/wecs=%s, every expression through CEL | %s | %s | %.0f× |\n", n, ms(kv), ms(sv), kv/sv)
	}
	full, upd := median(ks["full/wecs=10000"]), median(sf["update/wecs=10000"])
	fmt.Fprintf(&b, "| one WEC updated at 10,000 vs KubeStellar's full evaluation | %s | %s | %.0f× |\n", ms(full), ms(upd), full/upd)
	t.Log("\n" + b.String())
	for _, k := range []string{"full/wecs=1000", "full/wecs=10000", "update/wecs=10000", "full-cel/wecs=1000", "full-cel/wecs=10000"} {
		if _, isKS := ks[k]; (isKS && math.IsNaN(median(ks[k]))) || !(median(sf[k]) > 0) {
			t.Errorf("%s: no measurement", k)
		}
	}
}

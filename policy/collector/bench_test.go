package collector

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// The benchmarks compare the engine (compile once, evaluate prepared programs, incremental table)
// with a naive evaluator that parses, checks and plans every expression for every row, as
// KubeStellar 0.30.0 does. Run: go test ./policy/collector -run XXX -bench . -count 5

var benchSizes = []int{1000, 10000}

func benchWECs(n int) []WEC {
	regions := []string{"ap", "eu", "sa", "us"}
	ts := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	wecs := make([]WEC, n)
	for i := range wecs {
		wecs[i] = benchWEC(i, int64(i%5), regions[i%len(regions)], ts)
	}
	return wecs
}

func benchWEC(i int, available int64, region string, ts time.Time) WEC {
	return WEC{
		Name:   fmt.Sprintf("wec-%05d", i),
		Labels: map[string]string{"region": region},
		Status: map[string]any{
			"replicas": int64(3), "readyReplicas": available, "availableReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": "True"}},
		},
		LastUpdate: &ts,
	}
}

var benchObj = map[string]any{
	"apiVersion": "apps/v1", "kind": "Deployment",
	"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": int64(1)},
	"spec":     map[string]any{"replicas": int64(3)},
}

// The aggregation collector: filter + groupBy + COUNT + SUM (three expressions per row).
func benchAggregateCollector() *controlv1alpha1.StatusCollector {
	return statusCollector("by-region", withFilter("returned.status.readyReplicas > 0"),
		withGroupBy("region", "inventory.labels['region']"), withCount("count"),
		withAgg("available", sum, "returned.status.availableReplicas"))
}

// The select collector: three columns for every WEC (the limit is the WEC count, so every row is
// evaluated).
func benchSelectCollector(n int) *controlv1alpha1.StatusCollector {
	return statusCollector("full", withSelect("wec", "inventory.name"),
		withSelect("available", "returned.status.availableReplicas"),
		withSelect("retrievalTime", "propagation.lastReturnedUpdateTimestamp"), withLimit(int64(n)))
}

// benchFullAggregate evaluates an aggregation collector (four groups) over every size at once.
func benchFullAggregate(b *testing.B, col *Collector) {
	for _, n := range benchSizes {
		wecs := benchWECs(n)
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			for b.Loop() {
				res := Evaluate(benchObj, wecs, []*Collector{col})
				if len(res[0].Rows) != 4 {
					b.Fatalf("unexpected result %v", res)
				}
			}
		})
	}
}

func BenchmarkFullAggregate(b *testing.B) {
	c := newTestCompiler(b)
	col := mustCompile(b, c, benchAggregateCollector())
	benchFullAggregate(b, col)
}

// BenchmarkFullAggregateCELOnly is BenchmarkFullAggregate with expressions that are neither plain
// field paths nor comparisons of one with a literal, so every expression runs as a CEL program (no
// direct evaluation).
func BenchmarkFullAggregateCELOnly(b *testing.B) {
	c := newTestCompiler(b)
	col := mustCompile(b, c, statusCollector("by-region", withFilter("!(returned.status.readyReplicas <= 0)"),
		withGroupBy("region", "inventory.labels['region'] + ''"), withCount("count"),
		withAgg("available", sum, "returned.status.availableReplicas + 0")))
	benchFullAggregate(b, col)
}

// BenchmarkFullAggregateComprehension is BenchmarkFullAggregate with the usual KubeStellar
// filter, a comprehension over the reported conditions (which runs under the time budget).
func BenchmarkFullAggregateComprehension(b *testing.B) {
	c := newTestCompiler(b)
	col := mustCompile(b, c, statusCollector("by-region",
		withFilter("returned.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')"),
		withGroupBy("region", "inventory.labels['region']"), withCount("count"),
		withAgg("available", sum, "returned.status.availableReplicas")))
	benchFullAggregate(b, col)
}

func BenchmarkFullSelect(b *testing.B) {
	c := newTestCompiler(b)
	for _, n := range benchSizes {
		col := mustCompile(b, c, benchSelectCollector(n))
		wecs := benchWECs(n)
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			for b.Loop() {
				res := Evaluate(benchObj, wecs, []*Collector{col})
				if len(res[0].Rows) != n {
					b.Fatalf("got %d rows", len(res[0].Rows))
				}
			}
		})
	}
}

// BenchmarkSelectStatus selects each WEC's whole reported status, an Object cell per row (the
// full-status collector of KubeStellar's "Combined Status from WECs" docs), for 1,000 WECs.
func BenchmarkSelectStatus(b *testing.B) {
	const n = 1000
	c := newTestCompiler(b)
	col := mustCompile(b, c, statusCollector("full-status", withSelect("wec", "inventory.name"),
		withSelect("status", "returned.status"), withLimit(n)))
	wecs := benchWECs(n)
	for b.Loop() {
		res := Evaluate(benchObj, wecs, []*Collector{col})
		if len(res[0].Rows) != n {
			b.Fatalf("got %d rows", len(res[0].Rows))
		}
	}
}

// BenchmarkIncrementalUpsert updates one WEC of a 10,000-WEC table and reads the results.
func BenchmarkIncrementalUpsert(b *testing.B) {
	const n = 10000
	c := newTestCompiler(b)
	col := mustCompile(b, c, benchAggregateCollector())
	wecs := benchWECs(n)
	tbl := NewTable(benchObj, []*Collector{col})
	names := make([]string, n)
	for i, w := range wecs {
		names[i] = w.Name
		tbl.UpsertWEC(w)
	}
	tbl.SetDestinations(names)
	tbl.Results()
	ts := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	i := 0
	b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
		for b.Loop() {
			i++
			tbl.UpsertWEC(benchWEC(i%n, int64(i%5), "eu", ts))
			if res := tbl.Results(); len(res[0].Rows) == 0 {
				b.Fatal("no rows")
			}
		}
	})
}

// naiveEval parses, checks and plans an expression, then evaluates it once: what a naive
// evaluator does for every row.
func naiveEval(b *testing.B, c *Compiler, expr string, a *activation) any {
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		b.Fatal(iss.Err())
	}
	prg, err := c.env.Program(ast)
	if err != nil {
		b.Fatal(err)
	}
	out, _, err := prg.Eval(a)
	if err != nil {
		return nil
	}
	return out.Value()
}

func naiveTable() *Table { return &Table{obj: benchObj} }

func BenchmarkNaiveAggregate(b *testing.B) {
	c := newTestCompiler(b)
	sc := benchAggregateCollector()
	for _, n := range benchSizes {
		wecs, t := benchWECs(n), naiveTable()
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			for b.Loop() {
				counts, sums := map[any]int64{}, map[any]int64{}
				for _, w := range wecs {
					a := testActivation(t, w)
					if naiveEval(b, c, string(*sc.Spec.Filter), a) != true {
						continue
					}
					key := naiveEval(b, c, string(sc.Spec.GroupBy[0].Def), a)
					counts[key]++
					if v, ok := naiveEval(b, c, string(*sc.Spec.CombinedFields[1].Subject), a).(int64); ok {
						sums[key] += v
					}
				}
				if len(counts) != 4 {
					b.Fatalf("unexpected groups %v", counts)
				}
			}
		})
	}
}

func BenchmarkNaiveSelect(b *testing.B) {
	c := newTestCompiler(b)
	for _, n := range benchSizes {
		sc := benchSelectCollector(n)
		wecs, t := benchWECs(n), naiveTable()
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			for b.Loop() {
				rows := make([][]any, 0, n)
				for _, w := range wecs {
					a := testActivation(t, w)
					row := make([]any, len(sc.Spec.Select))
					for k, s := range sc.Spec.Select {
						row[k] = naiveEval(b, c, string(s.Def), a)
					}
					rows = append(rows, row)
				}
				if len(rows) != n {
					b.Fatal("rows")
				}
			}
		})
	}
}

// The rows and collector that test/kscompat's TestSpeed evaluates with KubeStellar v0.30.0's own
// evaluation code in another process (KubeStellar's cel-go v0.22 and this package's v0.30 cannot be
// in one build): WEC i reports readyReplicas = availableReplicas = i%5 in region i%4; the collector
// has a filter, a groupBy, a COUNT and a SUM, three CEL expressions per WEC in KubeStellar's
// environment (which has no inventory labels, so the region is in the reported state). Keep both
// sides in step: test/kscompat/speed_test.go.

func kscompatWEC(i int, ready int64) WEC {
	regions := []string{"ap", "eu", "sa", "us"}
	return WEC{Name: fmt.Sprintf("wec-%05d", i), Status: map[string]any{
		"replicas": int64(3), "readyReplicas": ready, "availableReplicas": ready, "region": regions[i%len(regions)],
	}}
}

func kscompatCollector() *controlv1alpha1.StatusCollector {
	return statusCollector("by-region", withFilter("returned.status.readyReplicas > 0"),
		withGroupBy("region", "returned.status.region"), withCount("count"),
		withAgg("available", sum, "returned.status.availableReplicas"))
}

// kscompatCELCollector is kscompatCollector with equivalent expressions that the engine does not
// evaluate directly, so all three run as CEL programs, as all of KubeStellar's do.
func kscompatCELCollector() *controlv1alpha1.StatusCollector {
	return statusCollector("by-region", withFilter("!(returned.status.readyReplicas <= 0)"),
		withGroupBy("region", "returned.status.region + ''"), withCount("count"),
		withAgg("available", sum, "returned.status.availableReplicas + 0"))
}

// BenchmarkKubeStellarRows: full evaluation at 1,000 and 10,000 WECs (also with every expression
// run as a CEL program: full-cel), and one WEC updated in a 10,000-WEC table (results read after
// each update).
func BenchmarkKubeStellarRows(b *testing.B) {
	c := newTestCompiler(b)
	col := mustCompile(b, c, kscompatCollector())
	celCol := mustCompile(b, c, kscompatCELCollector())
	for _, n := range benchSizes {
		wecs := make([]WEC, n)
		for i := range wecs {
			wecs[i] = kscompatWEC(i, int64(i%5))
		}
		for k, col := range []*Collector{col, celCol} {
			b.Run(fmt.Sprintf("%s/wecs=%d", []string{"full", "full-cel"}[k], n), func(b *testing.B) {
				for b.Loop() {
					if res := Evaluate(benchObj, wecs, []*Collector{col}); len(res[0].Rows) != 4 {
						b.Fatalf("unexpected result %v", res)
					}
				}
			})
		}
	}
	const n = 10000
	tbl := NewTable(benchObj, []*Collector{col})
	names := make([]string, n)
	for i := range n {
		names[i] = kscompatWEC(i, 0).Name
		tbl.UpsertWEC(kscompatWEC(i, int64(i%5)))
	}
	tbl.SetDestinations(names)
	tbl.Results()
	i := 0
	b.Run(fmt.Sprintf("update/wecs=%d", n), func(b *testing.B) {
		for b.Loop() {
			i++
			tbl.UpsertWEC(kscompatWEC(i%n, int64(1+i%4)))
			if res := tbl.Results(); len(res[0].Rows) != 4 {
				b.Fatalf("unexpected result %v", res)
			}
		}
	})
}

// BenchmarkTableBytesPerWEC reports the live heap a Table holds per WEC after its results were
// read (the WECs' inputs, shared with the caller, not counted): 1,000 WECs and the load test's
// collector mix (test/load Collectors): a COUNT, a groupBy histogram, a select with a filter
// that reads returned.status whole, and a MAX. "first": after every WEC was given once;
// "updated": after every WEC was then given again with a new status (the steady state of a
// Table that has seen updates).
func BenchmarkTableBytesPerWEC(b *testing.B) {
	const n = 1000
	cols := loadCollectors(b)
	wecs := benchWECs(n)
	names := make([]string, n)
	updates := make([]WEC, n)
	for i, w := range wecs {
		names[i] = w.Name
		updates[i] = benchWEC(i, int64((i+1)%5), "eu", *w.LastUpdate)
	}
	for _, updated := range []bool{false, true} {
		name := "first"
		if updated {
			name = "updated"
		}
		b.Run(name, func(b *testing.B) {
			var perWEC float64
			for b.Loop() {
				before := liveHeap()
				t := firstResults(b, cols, names, wecs)
				if updated {
					for _, w := range updates {
						t.UpsertWEC(w)
					}
					if res := t.Results(); len(res) != len(cols) {
						b.Fatalf("unexpected result %v", res)
					}
				}
				perWEC = float64(liveHeap()-before) / n
				runtime.KeepAlive(t)
			}
			b.ReportMetric(perWEC, "B/WEC")
		})
	}
}

// loadCollectors is the load test's collector mix (test/load Collectors).
func loadCollectors(b *testing.B) []*Collector {
	c := newTestCompiler(b)
	return []*Collector{
		mustCompile(b, c, statusCollector("load-count", withCount("count"))),
		mustCompile(b, c, statusCollector("load-histogram", withGroupBy("ready", "returned.status.readyReplicas"), withCount("count"))),
		mustCompile(b, c, statusCollector("load-not-ready", withFilter("returned.status != null && returned.status.readyReplicas < obj.spec.replicas"),
			withSelect("wec", "inventory.name"), withSelect("ready", "returned.status.readyReplicas"))),
		mustCompile(b, c, statusCollector("load-marker", withAgg("seq", max_, "returned.status.replicas"))),
	}
}

// BenchmarkFirstResultsCompact is a Table's first evaluation of 1,000 WECs whose statuses are
// compact (as the ITS cache holds them), with the load test's four collectors: each row's status
// is expanded for its CEL variables, once for all four collectors.
func BenchmarkFirstResultsCompact(b *testing.B) {
	const n = 1000
	cols := loadCollectors(b)
	wecs := benchWECs(n)
	names := make([]string, n)
	for i := range wecs {
		names[i] = wecs[i].Name
		wecs[i].Status = compactjson.Compact(wecs[i].Status, nil)
	}
	for b.Loop() {
		firstResults(b, cols, names, wecs)
	}
}

// firstResults returns a Table of benchObj, the collectors and the WECs (names: theirs), its
// results read once.
func firstResults(b *testing.B, cols []*Collector, names []string, wecs []WEC) *Table {
	t := NewTable(benchObj, cols)
	t.SetDestinations(names)
	for _, w := range wecs {
		t.UpsertWEC(w)
	}
	if res := t.Results(); len(res) != len(cols) {
		b.Fatalf("unexpected result %v", res)
	}
	return t
}

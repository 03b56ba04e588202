package collector

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

type evalCase struct {
	name string
	sc   *controlv1alpha1.StatusCollector
	obj  map[string]any
	wecs []WEC
	want controlv1alpha1.NamedStatusCombination
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	c := newTestCompiler(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col := mustCompile(t, c, tc.sc)
			got := Evaluate(tc.obj, tc.wecs, []*Collector{col})
			if len(got) != 1 {
				t.Fatalf("got %d results, want 1", len(got))
			}
			if d := cmp.Diff(tc.want, got[0], resultOpts); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

func result(name string, columns []string, rows ...controlv1alpha1.StatusCombinationRow) controlv1alpha1.NamedStatusCombination {
	return controlv1alpha1.NamedStatusCombination{Name: name, ColumnNames: columns, Rows: rows}
}

func withErrors(r controlv1alpha1.NamedStatusCombination, errs ...controlv1alpha1.RowEvaluationError) controlv1alpha1.NamedStatusCombination {
	r.RowErrors = errs
	return r
}

func withAggErrors(r controlv1alpha1.NamedStatusCombination, errs ...controlv1alpha1.ErrorInColumn) controlv1alpha1.NamedStatusCombination {
	r.AggregationErrors = errs
	return r
}

var t0 = time.Date(2024, 11, 7, 20, 15, 27, 0, time.UTC)

// The examples of KubeStellar's "Combined Status from WECs" docs
// (api/control/v1alpha1/testdata/statuscollectors.yaml).
func TestEvaluateSeedExamples(t *testing.T) {
	deployment := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": int64(2)}}
	wecs := func(t *testing.T) []WEC {
		return []WEC{
			wec("wec2", withStatus(statusJSON(t, `{"availableReplicas": 1, "phase": "Pending"}`)), withUpdated(t0.Add(time.Minute))),
			wec("wec1", withStatus(statusJSON(t, `{"availableReplicas": 2, "phase": "Running"}`)), withUpdated(t0)),
			wec("wec3", withStatus(statusJSON(t, `{"availableReplicas": 2, "phase": "Running"}`)), withUpdated(t0)),
			wec("wec4"), // a destination that has reported nothing yet
		}
	}
	runEvalCases(t, []evalCase{{
		name: "number of WECs",
		sc:   statusCollector("count-wecs", withCount("count"), withLimit(10)),
		obj:  deployment, wecs: wecs(t),
		want: result("count-wecs", []string{"count"}, row(vn("4"))),
	}, {
		name: "histogram of pod phase",
		sc:   statusCollector("pod-phase-histogram", withGroupBy("phase", "returned.status.phase"), withCount("count")),
		obj:  deployment, wecs: wecs(t),
		want: withErrors(result("pod-phase-histogram", []string{"phase", "count"},
			row(vs("Pending"), vn("1")), row(vs("Running"), vn("2"))),
			rowErr("wec4", "phase", "no such key: phase")),
	}, {
		name: "histogram of available replicas",
		sc:   statusCollector("available-replicas-histogram", withGroupBy("numAvailable", "returned.status.availableReplicas"), withCount("count")),
		obj:  deployment, wecs: wecs(t),
		want: withErrors(result("available-replicas-histogram", []string{"numAvailable", "count"},
			row(vn("1"), vn("1")), row(vn("2"), vn("2"))),
			rowErr("wec4", "numAvailable", "no such key: availableReplicas")),
	}, {
		name: "WECs not as available as desired",
		sc:   statusCollector("not-as-available-as-desired", withFilter("obj.spec.replicas != returned.status.availableReplicas"), withSelect("wec", "inventory.name")),
		obj:  deployment, wecs: wecs(t),
		want: withErrors(result("not-as-available-as-desired", []string{"wec"}, row(vs("wec2"))),
			rowErr("wec4", "", "no such key: availableReplicas")),
	}, {
		name: "full status with retrieval time",
		sc: statusCollector("full-status", withSelect("wec", "inventory.name"), withSelect("status", "returned.status"),
			withSelect("retrievalTime", "propagation.lastReturnedUpdateTimestamp")),
		obj: deployment, wecs: wecs(t),
		want: withErrors(result("full-status", []string{"wec", "status", "retrievalTime"},
			row(vs("wec1"), vobj(`{"availableReplicas":2,"phase":"Running"}`), vs("2024-11-07T20:15:27Z")),
			row(vs("wec2"), vobj(`{"availableReplicas":1,"phase":"Pending"}`), vs("2024-11-07T20:16:27Z")),
			row(vs("wec3"), vobj(`{"availableReplicas":2,"phase":"Running"}`), vs("2024-11-07T20:15:27Z")),
			row(vs("wec4"), vnull(), vnull())),
			rowErr("wec4", "retrievalTime", "no such key: lastReturnedUpdateTimestamp")),
	}})
}

func TestEvaluateFilter(t *testing.T) {
	wecs := func(t *testing.T) []WEC {
		return []WEC{
			wec("a", withStatus(statusJSON(t, `{"ready": true}`))),
			wec("b", withStatus(statusJSON(t, `{"ready": false}`))),
			wec("c", withStatus(statusJSON(t, `{"ready": null}`))),
			wec("d", withStatus(statusJSON(t, `{"ready": "yes"}`))),
			wec("e", withStatus(statusJSON(t, `{}`))),
			wec("f"),
		}
	}
	runEvalCases(t, []evalCase{{
		name: "true keeps, false and null drop, other types and errors drop with a row error",
		sc:   statusCollector("c", withFilter("returned.status.ready"), withSelect("wec", "inventory.name")),
		wecs: wecs(t),
		want: withErrors(result("c", []string{"wec"}, row(vs("a"))),
			rowErr("d", "", "filter evaluated to string, not bool"),
			rowErr("e", "", "no such key: ready"),
			rowErr("f", "", "no such key: ready")),
	}, {
		name: "filters apply before aggregation; a dropped row is not counted",
		sc:   statusCollector("c", withFilter("returned.status.ready"), withCount("n")),
		wecs: wecs(t),
		want: withErrors(result("c", []string{"n"}, row(vn("1"))),
			rowErr("d", "", "filter evaluated to string, not bool"),
			rowErr("e", "", "no such key: ready"),
			rowErr("f", "", "no such key: ready")),
	}, {
		name: "a WEC that reported nothing: returned.status is null, has() is true, no timestamp",
		sc: statusCollector("c", withFilter("has(returned.status) && returned.status == null && !has(propagation.lastReturnedUpdateTimestamp)"),
			withSelect("wec", "inventory.name")),
		wecs: []WEC{wec("never"), wec("reported", withStatus(statusJSON(t, `{}`)), withUpdated(t0)),
			wec("null-status", withStatus(nil), withUpdated(t0))},
		want: result("c", []string{"wec"}, row(vs("never")), row(vs("null-status"))),
	}, {
		name: "filter on inventory labels",
		sc:   statusCollector("c", withFilter("inventory.labels['region'] == 'eu'"), withSelect("wec", "inventory.name")),
		wecs: []WEC{wec("x", withLabels("region", "eu")), wec("y", withLabels("region", "us")), wec("z")},
		want: withErrors(result("c", []string{"wec"}, row(vs("x"))), rowErr("z", "", "no such key: region")),
	}})
}

func TestEvaluateSelect(t *testing.T) {
	three := []WEC{wec("c", withStatus(statusJSON(t, `{"n": 3}`))), wec("a", withStatus(statusJSON(t, `{"n": 1}`))), wec("b")}
	runEvalCases(t, []evalCase{{
		name: "rows by WEC name; a failing cell is Null with a row error",
		sc:   statusCollector("c", withSelect("wec", "inventory.name"), withSelect("n", "returned.status.n")),
		wecs: three,
		want: withErrors(result("c", []string{"wec", "n"},
			row(vs("a"), vn("1")), row(vs("b"), vnull()), row(vs("c"), vn("3"))),
			rowErr("b", "n", "no such key: n")),
	}, {
		name: "rows beyond the limit are not evaluated and cause no row errors",
		sc:   statusCollector("c", withSelect("n", "returned.status.n"), withLimit(1)),
		wecs: three,
		want: result("c", []string{"n"}, row(vn("1"))),
	}, {
		name: "filters are evaluated for every WEC, also beyond the limit",
		sc:   statusCollector("c", withFilter("returned.status.n > 0"), withSelect("n", "returned.status.n"), withLimit(1)),
		wecs: three,
		want: withErrors(result("c", []string{"n"}, row(vn("1"))), rowErr("b", "", "no such key: n")),
	}, {
		name: "the variables as whole values",
		sc: statusCollector("c", withSelect("inventory", "inventory"), withSelect("returned", "returned"), withSelect("propagation", "propagation"),
			withSelect("checks", "[dyn(size(dyn(inventory))), dyn(size(dyn(propagation))), dyn('name' in dyn(inventory)), dyn(dyn(inventory) == {'name': dyn(inventory.name), 'labels': dyn({'r': 'eu'})})]")),
		wecs: []WEC{wec("a", withLabels("r", "eu"), withStatus(statusJSON(t, `{"n": 1}`)), withUpdated(t0)), wec("b")},
		want: result("c", []string{"inventory", "returned", "propagation", "checks"},
			row(vobj(`{"labels":{"r":"eu"},"name":"a"}`), vobj(`{"status":{"n":1}}`),
				vobj(`{"lastReturnedUpdateTimestamp":"2024-11-07T20:15:27Z"}`), varr(`[2,1,true,true]`)),
			row(vobj(`{"labels":{},"name":"b"}`), vobj(`{"status":null}`), vobj(`{}`), varr(`[2,0,true,false]`))),
	}, {
		name: "the object is visible without its status",
		sc:   statusCollector("c", withSelect("name", "obj.metadata.name"), withSelect("hasStatus", "has(obj.status)")),
		obj:  map[string]any{"metadata": map[string]any{"name": "web"}},
		wecs: []WEC{wec("a")},
		want: result("c", []string{"name", "hasStatus"}, row(vs("web"), vb(false))),
	}})
}

// TestEvaluateRepeatedNames: when a WEC name repeats, the last input counts, whether or not the
// WECs come sorted by name; the caller's slice is left as it was.
func TestEvaluateRepeatedNames(t *testing.T) {
	n := func(name string, v int) WEC { return wec(name, withStatus(statusJSON(t, fmt.Sprintf(`{"n": %d}`, v)))) }
	sorted := []WEC{n("a", 1), n("a", 2), n("b", 3)}
	unsorted := []WEC{n("b", 3), n("a", 1), n("a", 2)}
	want := result("c", []string{"wec", "n"}, row(vs("a"), vn("2")), row(vs("b"), vn("3")))
	sc := statusCollector("c", withSelect("wec", "inventory.name"), withSelect("n", "returned.status.n"))
	runEvalCases(t, []evalCase{
		{name: "sorted", sc: sc, wecs: sorted, want: want},
		{name: "unsorted", sc: sc, wecs: unsorted, want: want},
	})
	if got := []string{unsorted[0].Name, unsorted[1].Name, unsorted[2].Name}; !cmp.Equal(got, []string{"b", "a", "a"}) {
		t.Errorf("Evaluate reordered its input: %v", got)
	}
}

func TestEvaluateRowErrorsBounded(t *testing.T) {
	var wecs []WEC
	for i := 24; i >= 0; i-- {
		wecs = append(wecs, wec(fmt.Sprintf("w%02d", i)))
	}
	var want []controlv1alpha1.RowEvaluationError
	for i := range MaxRowErrors {
		want = append(want, rowErr(fmt.Sprintf("w%02d", i), "n", "no such key: n"))
	}
	var rows []controlv1alpha1.StatusCombinationRow
	for range 25 {
		rows = append(rows, row(vnull()))
	}
	runEvalCases(t, []evalCase{{
		name: "at most 20 row errors, in WEC-name order",
		sc:   statusCollector("c", withSelect("n", "returned.status.n"), withLimit(100)),
		wecs: wecs,
		want: withErrors(result("c", []string{"n"}, rows...), want...),
	}, {
		name: "also for aggregations",
		sc:   statusCollector("c", withAgg("n", sum, "returned.status.n")),
		wecs: wecs,
		want: withErrors(result("c", []string{"n"}, row(vn("0"))), want...),
	}})
}

func TestEvaluateGroupBy(t *testing.T) {
	nums := func(vals ...any) []WEC {
		var out []WEC
		for i, v := range vals {
			out = append(out, wec(fmt.Sprintf("w%02d", i), withStatus(map[string]any{"k": v})))
		}
		return out
	}
	runEvalCases(t, []evalCase{{
		name: "2 and 2.0 are one group; lists and maps compare structurally",
		sc:   statusCollector("c", withGroupBy("k", "returned.status.k"), withCount("n")),
		wecs: nums(int64(2), 2.0, []any{int64(1), "a"}, []any{1.0, "a"}, map[string]any{"x": int64(1)}, map[string]any{"x": 1.0}, -0.0, int64(0)),
		want: result("c", []string{"k", "n"},
			row(vn("0"), vn("2")),
			row(vn("2"), vn("2")),
			row(varr(`[1,"a"]`), vn("2")),
			row(vobj(`{"x":1}`), vn("2"))),
	}, {
		name: "group order: null < bool < number < string < list < map; -Inf < finite < +Inf < NaN",
		sc:   statusCollector("c", withGroupBy("k", "returned.status.k"), withCount("n"), withLimit(100)),
		wecs: nums(map[string]any{"b": int64(1)}, map[string]any{"a": int64(2)}, map[string]any{"a": int64(1)}, map[string]any{},
			[]any{int64(1), int64(2)}, []any{int64(1)}, []any{}, []any{int64(0), int64(5)},
			"b", "a", "B", "",
			math.NaN(), math.Inf(1), 2.5, int64(-3), math.Inf(-1), uint64(18446744073709551615), 1e300,
			true, false, nil),
		want: result("c", []string{"k", "n"},
			row(vnull(), vn("1")), row(vb(false), vn("1")), row(vb(true), vn("1")),
			row(vn("-Inf"), vn("1")), row(vn("-3"), vn("1")), row(vn("2.5"), vn("1")),
			row(vn("18446744073709551615"), vn("1")), row(vn("1e+300"), vn("1")), row(vn("+Inf"), vn("1")), row(vn("NaN"), vn("1")),
			row(vs(""), vn("1")), row(vs("B"), vn("1")), row(vs("a"), vn("1")), row(vs("b"), vn("1")),
			row(varr(`[]`), vn("1")), row(varr(`[0,5]`), vn("1")), row(varr(`[1]`), vn("1")), row(varr(`[1,2]`), vn("1")),
			row(vobj(`{}`), vn("1")), row(vobj(`{"a":1}`), vn("1")), row(vobj(`{"a":2}`), vn("1")), row(vobj(`{"b":1}`), vn("1"))),
	}, {
		name: "several groupBy columns, ordered column by column; limit on groups",
		sc: statusCollector("c", withGroupBy("region", "inventory.labels['region']"), withGroupBy("phase", "returned.status.phase"),
			withCount("n"), withLimit(3)),
		wecs: []WEC{
			wec("a", withLabels("region", "us"), withStatus(statusJSON(t, `{"phase": "Running"}`))),
			wec("b", withLabels("region", "eu"), withStatus(statusJSON(t, `{"phase": "Running"}`))),
			wec("c", withLabels("region", "eu"), withStatus(statusJSON(t, `{"phase": "Failed"}`))),
			wec("d", withLabels("region", "us"), withStatus(statusJSON(t, `{"phase": "Running"}`))),
			wec("e", withLabels("region", "ap"), withStatus(statusJSON(t, `{"phase": "Running"}`))),
			wec("f", withLabels("region", "us"), withStatus(statusJSON(t, `{"phase": "Pending"}`))),
		},
		want: result("c", []string{"region", "phase", "n"},
			row(vs("ap"), vs("Running"), vn("1")), row(vs("eu"), vs("Failed"), vn("1")), row(vs("eu"), vs("Running"), vn("1"))),
	}, {
		name: "a groupBy error drops the row with a row error; no kept rows means no groups",
		sc:   statusCollector("c", withGroupBy("k", "returned.status.k"), withCount("n")),
		wecs: []WEC{wec("a"), wec("b", withStatus(statusJSON(t, `{"k": [1]}`))), wec("c", withStatus(map[string]any{"k": []any{math.NaN()}}))},
		want: withErrors(result("c", []string{"k", "n"}, row(varr(`[1]`), vn("1"))),
			rowErr("a", "k", "no such key: k"),
			rowErr("c", "k", "a NaN or infinite number inside a list or map cannot be written as JSON")),
	}, {
		name: "with groupBy and no rows there are no groups",
		sc:   statusCollector("c", withFilter("false"), withGroupBy("k", "1"), withCount("n")),
		wecs: []WEC{wec("a")},
		want: result("c", []string{"k", "n"}),
	}})
}

func TestEvaluateAggregates(t *testing.T) {
	ns := func(vals ...any) []WEC {
		var out []WEC
		for i, v := range vals {
			out = append(out, wec(fmt.Sprintf("w%02d", i), withStatus(map[string]any{"n": v})))
		}
		return out
	}
	all := func(name string, extra ...scOption) *controlv1alpha1.StatusCollector {
		opts := append([]scOption{withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n"),
			withAgg("min", min_, "returned.status.n"), withAgg("max", max_, "returned.status.n")}, extra...)
		return statusCollector(name, opts...)
	}
	cols := []string{"count", "sum", "avg", "min", "max"}
	runEvalCases(t, []evalCase{{
		name: "integers: exact SUM, double AVG",
		sc:   all("c"),
		wecs: ns(int64(1), int64(2), int64(4)),
		want: result("c", cols, row(vn("3"), vn("7"), vn("2.3333333333333335"), vn("1"), vn("4"))),
	}, {
		name: "empty input identities without groupBy: exactly one row",
		sc:   all("c", withFilter("false")),
		wecs: ns(int64(1)),
		want: result("c", cols, row(vn("0"), vn("0"), vn("NaN"), vn("+Inf"), vn("-Inf"))),
	}, {
		name: "no destinations at all",
		sc:   all("c"),
		want: result("c", cols, row(vn("0"), vn("0"), vn("NaN"), vn("+Inf"), vn("-Inf"))),
	}, {
		name: "null subjects are skipped as SQL skips NULL, but the row counts",
		sc:   all("c"),
		wecs: ns(nil, int64(5), nil),
		want: result("c", cols, row(vn("3"), vn("5"), vn("5"), vn("5"), vn("5"))),
	}, {
		name: "numeric strings count; MIN and MAX return the chosen value",
		sc:   all("c"),
		wecs: ns("4", "-2.5e3", int64(3), "+007"),
		want: result("c", cols, row(vn("4"), vn("-2486"), vn("-621.5"), vn("-2500"), vn("7"))),
	}, {
		name: "bools, maps, lists and non-numeric strings are aggregation errors: first by WEC name, with a count",
		sc:   all("c"),
		wecs: ns(int64(1), true, "NaN", map[string]any{}, " 4", "100m", "0x10", "Inf", []any{}),
		want: withAggErrors(result("c", cols, row(vn("9"), vn("1"), vn("1"), vn("1"), vn("1"))),
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "sum", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "avg", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "min", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "max", Error: "bool value true is not a number", Count: 8}),
	}, {
		name: "a failing subject is a row error with the column's name and leaves the row out of every column, COUNT too",
		sc:   statusCollector("c", withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("names", max_, "inventory.name.size()")),
		wecs: []WEC{wec("a", withStatus(statusJSON(t, `{"n": 2}`))), wec("bb")},
		want: withErrors(result("c", []string{"count", "sum", "names"}, row(vn("1"), vn("2"), vn("1"))),
			rowErr("bb", "sum", "no such key: n")),
	}, {
		// issue 12's table: KubeStellar v0.30.0 gives count 1, sum 2.
		name: "COUNT and SUM over a field missing in 2 of 3 WECs: the failing rows are omitted",
		sc:   statusCollector("c", withCount("count"), withAgg("sum", sum, "returned.status.n")),
		wecs: []WEC{wec("a", withStatus(statusJSON(t, `{"n": 2}`))), wec("b", withStatus(statusJSON(t, `{}`))), wec("c")},
		want: withErrors(result("c", []string{"count", "sum"}, row(vn("1"), vn("2"))),
			rowErr("b", "sum", "no such key: n"), rowErr("c", "sum", "no such key: n")),
	}, {
		name: "every subject failing: the identities, and the one row without groupBy",
		sc:   statusCollector("c", withCount("count"), withAgg("avg", avg, "returned.status.n"), withAgg("min", min_, "returned.status.n")),
		wecs: []WEC{wec("a"), wec("b")},
		want: withErrors(result("c", []string{"count", "avg", "min"}, row(vn("0"), vn("NaN"), vn("+Inf"))),
			rowErr("a", "avg", "no such key: n"), rowErr("a", "min", "no such key: n"),
			rowErr("b", "avg", "no such key: n"), rowErr("b", "min", "no such key: n")),
	}, {
		name: "COUNT alone has no expression to fail: every row counts, reported or not",
		sc:   statusCollector("c", withCount("count")),
		wecs: []WEC{wec("a", withStatus(statusJSON(t, `{"n": 2}`))), wec("b")},
		want: result("c", []string{"count"}, row(vn("2"))),
	}, {
		name: "with groupBy, a row whose subject fails is in no group: a group of only such rows disappears",
		sc:   statusCollector("c", withGroupBy("g", "returned.status.g"), withCount("count"), withAgg("sum", sum, "returned.status.n")),
		wecs: []WEC{
			wec("a", withStatus(statusJSON(t, `{"g": "x", "n": 1}`))),
			wec("b", withStatus(statusJSON(t, `{"g": "x"}`))),
			wec("c", withStatus(statusJSON(t, `{"g": "y"}`))),
		},
		want: withErrors(result("c", []string{"g", "count", "sum"}, row(vs("x"), vn("1"), vn("1"))),
			rowErr("b", "sum", "no such key: n"), rowErr("c", "sum", "no such key: n")),
	}, {
		name: "a value that is not a number is an aggregation error, not a row error: the row counts",
		sc:   statusCollector("c", withCount("count"), withAgg("sum", sum, "returned.status.n")),
		wecs: []WEC{wec("a", withStatus(statusJSON(t, `{"n": 2}`))), wec("b", withStatus(statusJSON(t, `{"n": "two"}`)))},
		want: withAggErrors(result("c", []string{"count", "sum"}, row(vn("2"), vn("2"))),
			controlv1alpha1.ErrorInColumn{ColumnName: "sum", Error: `string value "two" is not a number`, Row: 0, Count: 1}),
	}, {
		name: "exact big-integer sums",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n"), withAgg("max", max_, "returned.status.n")),
		wecs: ns(int64(math.MaxInt64), int64(math.MaxInt64), "123456789012345678901234567890", uint64(math.MaxUint64)),
		want: result("c", []string{"sum", "max"}, row(vn("123456789049239167048653671119"), vn("123456789012345678901234567890"))),
	}, {
		name: "a sum with a double is a double, of the exact total",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n")),
		wecs: ns(1e20, int64(1), -1e20, 0.5),
		want: result("c", []string{"sum", "avg"}, row(vn("1.5"), vn("0.375"))),
	}, {
		name: "integral doubles sum to a double",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n")),
		wecs: ns(2.0, int64(3)),
		want: result("c", []string{"sum"}, row(vn("5"))),
	}, {
		name: "NaN and infinities",
		sc:   all("c"),
		wecs: ns(math.Inf(1), int64(1), math.Inf(-1)),
		want: result("c", cols, row(vn("3"), vn("NaN"), vn("NaN"), vn("-Inf"), vn("+Inf"))),
	}, {
		name: "NaN is the greatest number for MIN and MAX",
		sc:   all("c"),
		wecs: ns(math.NaN(), int64(1)),
		want: result("c", cols, row(vn("2"), vn("NaN"), vn("NaN"), vn("1"), vn("NaN"))),
	}, {
		name: "uint and double subjects from CEL, optionals unwrapped",
		sc: statusCollector("c", withAgg("s", sum, "inventory.name == 'a' ? dyn(1u) : dyn(2.5)"),
			withAgg("o", sum, "inventory.name == 'a' ? dyn(optional.of(3)) : dyn(optional.none())")),
		wecs: []WEC{wec("a"), wec("b")},
		want: result("c", []string{"s", "o"}, row(vn("3.5"), vn("3"))),
	}, {
		name: "aggregation per group, errors per group row",
		sc: statusCollector("c", withGroupBy("g", "returned.status.g"), withAgg("sum", sum, "returned.status.n"),
			withAgg("avg", avg, "returned.status.n")),
		wecs: []WEC{
			wec("a", withStatus(statusJSON(t, `{"g": "x", "n": 1}`))),
			wec("b", withStatus(statusJSON(t, `{"g": "y", "n": "no"}`))),
			wec("c", withStatus(statusJSON(t, `{"g": "x", "n": 2.5}`))),
			wec("d", withStatus(statusJSON(t, `{"g": "y", "n": 4}`))),
			wec("e", withStatus(statusJSON(t, `{"g": "y", "n": false}`))),
		},
		want: withAggErrors(result("c", []string{"g", "sum", "avg"}, row(vs("x"), vn("3.5"), vn("1.75")), row(vs("y"), vn("4"), vn("4"))),
			controlv1alpha1.ErrorInColumn{Row: 1, ColumnName: "sum", Error: `string value "no" is not a number`, Count: 2},
			controlv1alpha1.ErrorInColumn{Row: 1, ColumnName: "avg", Error: `string value "no" is not a number`, Count: 2}),
	}})
}

func TestEvaluateValues(t *testing.T) {
	cases := []struct {
		expr    string
		want    controlv1alpha1.Value
		wantErr string
	}{
		{expr: "'x'", want: vs("x")},
		{expr: "1", want: vn("1")},
		{expr: "-9223372036854775808", want: vn("-9223372036854775808")},
		{expr: "18446744073709551615u", want: vn("18446744073709551615")},
		{expr: "2.0", want: vn("2")},
		{expr: "0.5", want: vn("0.5")},
		{expr: "-0.0", want: vn("0")},
		{expr: "0.1 + 0.2", want: vn("0.30000000000000004")},
		{expr: "1e21", want: vn("1e+21")},
		{expr: "1e20", want: vn("100000000000000000000")},
		{expr: "0.000001", want: vn("0.000001")},
		{expr: "0.0000001", want: vn("1e-7")},
		{expr: "-1.5e-300", want: vn("-1.5e-300")},
		{expr: "double('NaN')", want: vn("NaN")},
		{expr: "double('Infinity')", want: vn("+Inf")},
		{expr: "-double('Infinity')", want: vn("-Inf")},
		{expr: "true", want: vb(true)},
		{expr: "null", want: vnull()},
		{expr: "[dyn(1), dyn('a'), dyn([null])]", want: varr(`[1,"a",[null]]`)},
		{expr: "[]", want: varr(`[]`)},
		{expr: "{'b': dyn(1), 'a': dyn({'c': false})}", want: vobj(`{"a":{"c":false},"b":1}`)},
		{expr: "timestamp('2024-01-02T03:04:05.5+01:00')", want: vs("2024-01-02T02:04:05.5Z")},
		{expr: "duration('90m')", want: vs("1h30m0s")},
		{expr: "optional.of(3)", want: vn("3")},
		{expr: "optional.none()", want: vnull()},
		{expr: "b'abc'", want: vs("YWJj")},
		{expr: "quantity('100m')", want: vs("100m")},
		{expr: "url('https://example.com/a?b=c')", want: vs("https://example.com/a?b=c")},
		{expr: "type(1)", want: vs("int")},
		{expr: "[dyn(timestamp('2024-01-02T03:04:05Z')), dyn(duration('1s')), dyn(b'\\x00')]", want: varr(`["2024-01-02T03:04:05Z","1s","AA=="]`)},
		// Inside a list or map, numbers are plain JSON numbers written as the float field's text.
		{expr: "[0.5, 2.0, 1e21, 0.0000001, -0.0, 1e20]", want: varr(`[0.5,2,1e+21,1e-7,0,100000000000000000000]`)},
		{expr: "{'i': dyn(-9223372036854775808), 'u': dyn(18446744073709551615u)}", want: vobj(`{"i":-9223372036854775808,"u":18446744073709551615}`)},
		// Strings are escaped as encoding/json (and so the apiserver) writes them.
		{expr: "['<a&b>', '\"q\"', 'é\\n']", want: varr(`["\u003ca\u0026b\u003e","\"q\"","é\n"]`)},
		{expr: "[1.0, double('NaN')]", wantErr: "a NaN or infinite number inside a list or map cannot be written as JSON"},
		{expr: "{'a': double('Infinity')}", wantErr: "a NaN or infinite number inside a list or map cannot be written as JSON"},
		{expr: "{1: 'a'}", wantErr: "a map key of type int cannot be a JSON object key"},
		{expr: "1 / 0", wantErr: "division by zero"},
	}
	c := newTestCompiler(t)
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			col := mustCompile(t, c, statusCollector("c", withSelect("v", tc.expr)))
			got := Evaluate(nil, []WEC{wec("w")}, []*Collector{col})[0]
			want := result("c", []string{"v"}, row(tc.want))
			if tc.wantErr != "" {
				want = withErrors(result("c", []string{"v"}, row(vnull())), rowErr("w", "v", tc.wantErr))
			}
			if d := cmp.Diff(want, got, resultOpts); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestEvaluateSeveralCollectorsByName(t *testing.T) {
	c := newTestCompiler(t)
	b := mustCompile(t, c, statusCollector("b", withCount("n")))
	a := mustCompile(t, c, statusCollector("a", withSelect("w", "inventory.name")))
	got := Evaluate(nil, []WEC{wec("x")}, []*Collector{b, a})
	want := []controlv1alpha1.NamedStatusCombination{
		result("a", []string{"w"}, row(vs("x"))),
		result("b", []string{"n"}, row(vn("1"))),
	}
	if d := cmp.Diff(want, got, resultOpts); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestEvaluateRuntimeCostLimit(t *testing.T) {
	c := newTestCompiler(t)
	// Statically fine (a reported string counts as at most 1 KiB), but this WEC reports 12 MB:
	// contains() costs one unit per 10 characters.
	col := mustCompile(t, c, statusCollector("c", withSelect("v", "returned.status.s.contains('x')")))
	got := Evaluate(nil, []WEC{wec("w", withStatus(map[string]any{"s": strings.Repeat("a", 12_000_000)}))}, []*Collector{col})[0]
	want := withErrors(result("c", []string{"v"}, row(vnull())), rowErr("w", "v", "operation cancelled: actual cost limit exceeded"))
	if d := cmp.Diff(want, got, resultOpts); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

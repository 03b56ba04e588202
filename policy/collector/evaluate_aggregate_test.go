package collector

import (
	"fmt"
	"math"
	"slices"
	"testing"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

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

// wecsWithN returns a WEC per value, named w00, w01, …, each reporting {"n": value}.
func wecsWithN(vals ...any) []WEC {
	var out []WEC
	for i, v := range vals {
		out = append(out, wec(fmt.Sprintf("w%02d", i), withStatus(map[string]any{"n": v})))
	}
	return out
}

// allAggregates is a collector of every aggregation over returned.status.n, whose columns are
// aggregateColumns.
func allAggregates(name string, extra ...scOption) *controlv1alpha1.StatusCollector {
	opts := append([]scOption{withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n"),
		withAgg("min", min_, "returned.status.n"), withAgg("max", max_, "returned.status.n")}, extra...)
	return statusCollector(name, opts...)
}

// aggregateColumns are the columns of allAggregates.
var aggregateColumns = []string{"count", "sum", "avg", "min", "max"}

func TestEvaluateAggregates(t *testing.T) {
	runEvalCases(t, slices.Concat(aggregateSubjectCases(), aggregateRowErrorCases(t), aggregateNumberCases(t)))
}

// aggregateSubjectCases: identities, null subjects, numeric strings, and values that are not
// numbers (aggregation errors).
func aggregateSubjectCases() []evalCase {
	return []evalCase{{
		name: "integers: exact SUM, double AVG",
		sc:   allAggregates("c"),
		wecs: wecsWithN(int64(1), int64(2), int64(4)),
		want: result("c", aggregateColumns, row(vn("3"), vn("7"), vn("2.3333333333333335"), vn("1"), vn("4"))),
	}, {
		name: "empty input identities without groupBy: exactly one row",
		sc:   allAggregates("c", withFilter("false")),
		wecs: wecsWithN(int64(1)),
		want: result("c", aggregateColumns, row(vn("0"), vn("0"), vn("NaN"), vn("+Inf"), vn("-Inf"))),
	}, {
		name: "no destinations at all",
		sc:   allAggregates("c"),
		want: result("c", aggregateColumns, row(vn("0"), vn("0"), vn("NaN"), vn("+Inf"), vn("-Inf"))),
	}, {
		name: "null subjects are skipped as SQL skips NULL, but the row counts",
		sc:   allAggregates("c"),
		wecs: wecsWithN(nil, int64(5), nil),
		want: result("c", aggregateColumns, row(vn("3"), vn("5"), vn("5"), vn("5"), vn("5"))),
	}, {
		name: "numeric strings count; MIN and MAX return the chosen value",
		sc:   allAggregates("c"),
		wecs: wecsWithN("4", "-2.5e3", int64(3), "+007"),
		want: result("c", aggregateColumns, row(vn("4"), vn("-2486"), vn("-621.5"), vn("-2500"), vn("7"))),
	}, {
		name: "bools, maps, lists and non-numeric strings are aggregation errors: first by WEC name, with a count",
		sc:   allAggregates("c"),
		wecs: wecsWithN(int64(1), true, "NaN", map[string]any{}, " 4", "100m", "0x10", "Inf", []any{}),
		want: withAggErrors(result("c", aggregateColumns, row(vn("9"), vn("1"), vn("1"), vn("1"), vn("1"))),
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "sum", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "avg", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "min", Error: "bool value true is not a number", Count: 8},
			controlv1alpha1.ErrorInColumn{Row: 0, ColumnName: "max", Error: "bool value true is not a number", Count: 8}),
	}}
}

// aggregateRowErrorCases: a failing subject is a row error and leaves the row out of the
// aggregation input as a whole; a value that is not a number is not.
func aggregateRowErrorCases(t *testing.T) []evalCase {
	return []evalCase{{
		name: "a failing subject is a row error with the column's name and leaves the row out of every column, COUNT too",
		sc:   statusCollector("c", withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("names", max_, "inventory.name.size()")),
		wecs: []WEC{wec("a", withStatus(statusJSON(t, `{"n": 2}`))), wec("bb")},
		want: withErrors(result("c", []string{"count", "sum", "names"}, row(vn("1"), vn("2"), vn("1"))),
			rowErr("bb", "sum", "no such key: n")),
	}, {
		// docs/collectors.md: COUNT and SUM over a field that 2 of 3 WECs lack give count 1 and the
		// one WEC's value; KubeStellar v0.30.0 gives count 1, sum 2 as well.
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
	}}
}

// aggregateNumberCases: exact sums, doubles, NaN and the infinities, CEL's uint, double and
// optional subjects, and aggregation per group.
func aggregateNumberCases(t *testing.T) []evalCase {
	return []evalCase{{
		name: "exact big-integer sums",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n"), withAgg("max", max_, "returned.status.n")),
		wecs: wecsWithN(int64(math.MaxInt64), int64(math.MaxInt64), "123456789012345678901234567890", uint64(math.MaxUint64)),
		want: result("c", []string{"sum", "max"}, row(vn("123456789049239167048653671119"), vn("123456789012345678901234567890"))),
	}, {
		name: "a sum with a double is a double, of the exact total",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n")),
		wecs: wecsWithN(1e20, int64(1), -1e20, 0.5),
		want: result("c", []string{"sum", "avg"}, row(vn("1.5"), vn("0.375"))),
	}, {
		name: "integral doubles sum to a double",
		sc:   statusCollector("c", withAgg("sum", sum, "returned.status.n")),
		wecs: wecsWithN(2.0, int64(3)),
		want: result("c", []string{"sum"}, row(vn("5"))),
	}, {
		name: "NaN and infinities",
		sc:   allAggregates("c"),
		wecs: wecsWithN(math.Inf(1), int64(1), math.Inf(-1)),
		want: result("c", aggregateColumns, row(vn("3"), vn("NaN"), vn("NaN"), vn("-Inf"), vn("+Inf"))),
	}, {
		name: "NaN is the greatest number for MIN and MAX",
		sc:   allAggregates("c"),
		wecs: wecsWithN(math.NaN(), int64(1)),
		want: result("c", aggregateColumns, row(vn("2"), vn("NaN"), vn("NaN"), vn("1"), vn("NaN"))),
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
	}}
}

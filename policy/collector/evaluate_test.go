package collector

import (
	"fmt"
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

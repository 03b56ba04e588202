package collector

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-cmp/cmp"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// incrementalCollectors cover select (with filter and limit), grouped and ungrouped aggregation.
func incrementalCollectors(t *testing.T) []*Collector {
	c := newTestCompiler(t)
	return []*Collector{
		mustCompile(t, c, statusCollector("select", withFilter("returned.status.ready"),
			withSelect("wec", "inventory.name"), withSelect("n", "returned.status.n"), withLimit(3))),
		mustCompile(t, c, statusCollector("grouped", withFilter("obj.spec.replicas >= 0"),
			withGroupBy("g", "returned.status.g"), withGroupBy("region", "inventory.labels['region']"),
			withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n"),
			withAgg("min", min_, "returned.status.n"), withAgg("max", max_, "returned.status.n"), withLimit(4))),
		mustCompile(t, c, statusCollector("total", withFilter("returned.status.n != obj.spec.replicas"),
			withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("max", max_, "returned.status.n"))),
		// Without a filter, rows whose subject fails (no n, or nothing reported) are left out of
		// the aggregation input, COUNT included; COUNT alone always counts every row.
		mustCompile(t, c, statusCollector("omitted", withCount("count"), withAgg("sum", sum, "returned.status.n"),
			withAgg("min", min_, "returned.status.n"))),
		mustCompile(t, c, statusCollector("omitted-grouped", withGroupBy("ready", "returned.status.ready"),
			withCount("count"), withAgg("avg", avg, "returned.status.n"))),
		mustCompile(t, c, statusCollector("count-only", withCount("count"))),
	}
}

func randomStatus(r *rand.Rand) any {
	if r.IntN(6) == 0 {
		return nil
	}
	s := map[string]any{}
	switch r.IntN(8) {
	case 0:
		s["n"] = int64(r.IntN(7) - 2)
	case 1:
		s["n"] = float64(r.IntN(9)) / 4
	case 2:
		s["n"] = fmt.Sprint(r.IntN(5))
	case 3:
		s["n"] = r.IntN(2) == 0
	case 4:
		s["n"] = nil
	case 5:
		s["n"] = 1e20
	case 6:
		s["n"] = -1e20
	}
	switch r.IntN(5) {
	case 0:
		s["g"] = "x"
	case 1:
		s["g"] = int64(2)
	case 2:
		s["g"] = 2.0
	case 3:
		s["g"] = []any{"y"}
	}
	if r.IntN(4) > 0 {
		s["ready"] = r.IntN(3) > 0
	}
	return s
}

// TestTableIncrementalMatchesOneShot applies random updates to a Table and checks after each that
// its results equal a one-shot evaluation of the same inputs.
func TestTableIncrementalMatchesOneShot(t *testing.T) {
	cols := incrementalCollectors(t)
	r := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("wec-%02d", i)
	}
	obj := func() map[string]any { return map[string]any{"spec": map[string]any{"replicas": int64(r.IntN(4))}} }
	curObj := obj()
	curCols := cols
	inputs := map[string]WEC{}
	var dests []string

	const steps = 1500
	tbl := NewTable(curObj, curCols)
	for step := range steps {
		var op string
		switch k := r.IntN(20); {
		case k < 12:
			w := WEC{Name: names[r.IntN(len(names))], Status: randomStatus(r)}
			if r.IntN(2) == 0 {
				w.Labels = map[string]string{"region": []string{"eu", "us"}[r.IntN(2)]}
			}
			inputs[w.Name] = w
			if r.IntN(2) == 0 { // the Table reads a compact status (the ITS cache's form) as its plain form
				w.Status = compactjson.Compact(w.Status, nil)
			}
			tbl.UpsertWEC(w)
			op = "upsert " + w.Name
		case k < 14:
			name := names[r.IntN(len(names))]
			delete(inputs, name)
			tbl.RemoveWEC(name)
			op = "remove " + name
		case k < 17:
			dests = nil
			for _, n := range names {
				if r.IntN(3) > 0 {
					dests = append(dests, n)
				}
			}
			r.Shuffle(len(dests), func(i, j int) { dests[i], dests[j] = dests[j], dests[i] })
			tbl.SetDestinations(dests)
			op = fmt.Sprintf("destinations %v", dests)
		case k < 18:
			curObj = obj()
			tbl.SetObject(curObj)
			op = "object"
		default:
			curCols = slices.Clone(cols)
			r.Shuffle(len(curCols), func(i, j int) { curCols[i], curCols[j] = curCols[j], curCols[i] })
			curCols = curCols[:1+r.IntN(len(curCols))]
			tbl.SetCollectors(curCols)
			op = "collectors"
		}
		if got, want := slices.Sorted(tbl.Inputs()), slices.Sorted(maps.Keys(inputs)); !slices.Equal(got, want) {
			t.Fatalf("step %d (%s): Inputs = %v, want %v", step, op, got, want)
		}
		if r.IntN(3) > 0 && step != steps-1 {
			continue // results are also read after several updates
		}
		var wecs []WEC
		for _, n := range dests {
			w, ok := inputs[n]
			if !ok {
				w = WEC{Name: n}
			}
			wecs = append(wecs, w)
		}
		want := Evaluate(curObj, wecs, curCols)
		if d := cmp.Diff(want, tbl.Results(), resultOpts); d != "" {
			t.Fatalf("step %d (%s): incremental results differ from one-shot (-want +got):\n%s", step, op, d)
		}
	}
}

// TestTableUpsertOnlyChangesThatRow checks that an update of one WEC evaluates only that WEC's
// expressions: another WEC's cached input is broken on purpose, and its cached row must survive.
func TestTableUpsertOnlyChangesThatRow(t *testing.T) {
	c := newTestCompiler(t)
	col := mustCompile(t, c, statusCollector("c", withGroupBy("g", "returned.status.g"), withCount("n")))
	tbl := NewTable(nil, []*Collector{col})
	tbl.SetDestinations([]string{"a", "b", "c"})
	for _, n := range []string{"a", "b", "c"} {
		tbl.UpsertWEC(WEC{Name: n, Status: map[string]any{"g": "x"}})
	}
	if got, want := tbl.Results()[0].Rows, []controlv1alpha1.StatusCombinationRow{row(vs("x"), vn("3"))}; !cmp.Equal(want, got) {
		t.Fatalf("got %v", got)
	}
	// Poison the kept input of "a": if an update of "b" re-evaluated "a", its row would fail.
	tbl.rows[0].Status = "not a map"
	tbl.actRow = -1
	tbl.UpsertWEC(WEC{Name: "b", Status: map[string]any{"g": "y"}})
	want := []controlv1alpha1.StatusCombinationRow{row(vs("x"), vn("2")), row(vs("y"), vn("1"))}
	if d := cmp.Diff(want, tbl.Results()[0].Rows); d != "" || len(tbl.Results()[0].RowErrors) > 0 {
		t.Fatalf("(-want +got):\n%s\nerrors: %v", d, tbl.Results()[0].RowErrors)
	}
}

// TestTableKeepsNoCELValuesBetweenEvaluations: after results are read, the Table holds no CEL
// values (they would cost memory per Table), and the results stay those of a one-shot evaluation
// when rows change afterwards.
func TestTableKeepsNoCELValuesBetweenEvaluations(t *testing.T) {
	cols := incrementalCollectors(t)
	obj := map[string]any{"spec": map[string]any{"replicas": int64(2)}}
	var wecs []WEC
	for i := range 8 {
		wecs = append(wecs, wec(fmt.Sprintf("c%d", i), withStatus(map[string]any{"ready": true, "n": int64(i), "g": "x"}),
			withLabels("region", fmt.Sprintf("r%d", i%2))))
	}
	names := func(ws []WEC) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Name)
		}
		return out
	}
	held := func(tb *Table) []string {
		var out []string
		for _, f := range []*fieldsVal{&tb.act.inventory, &tb.act.returned, &tb.act.propagation} {
			if f.vals != [2]ref.Val{} {
				out = append(out, f.names[0])
			}
		}
		return out
	}
	tb := NewTable(obj, cols)
	tb.SetDestinations(names(wecs))
	for _, w := range wecs {
		tb.UpsertWEC(w)
	}
	if diff := cmp.Diff(Evaluate(obj, wecs, cols), tb.Results()); diff != "" {
		t.Fatalf("first results (-one-shot +table):\n%s", diff)
	}
	if h := held(tb); len(h) > 0 {
		t.Errorf("after the first results, the Table holds CEL values of %v", h)
	}
	wecs[5] = wec("c5", withStatus(map[string]any{"ready": true, "n": int64(40), "g": "y"}), withLabels("region", "r9"))
	tb.UpsertWEC(wecs[5])
	tb.RemoveWEC("c6")
	wecs[6] = wec("c6")
	if diff := cmp.Diff(Evaluate(obj, wecs, cols), tb.Results()); diff != "" {
		t.Fatalf("results after updates (-one-shot +table):\n%s", diff)
	}
	if h := held(tb); len(h) > 0 {
		t.Errorf("after updates, the Table holds CEL values of %v", h)
	}
}

// TestTableUpsertSameInput: an input the same as the WEC's previous one (the same status value,
// equal labels and time) leaves the row as it is; any other input re-evaluates it.
func TestTableUpsertSameInput(t *testing.T) {
	c := newTestCompiler(t)
	col := mustCompile(t, c, statusCollector("c", withGroupBy("g", "returned.status.g"), withCount("n")))
	tbl := NewTable(nil, []*Collector{col})
	tbl.SetDestinations([]string{"a"})
	status := map[string]any{"g": "x"}
	ts := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	tbl.UpsertWEC(WEC{Name: "a", Labels: map[string]string{"l": "1"}, Status: status, LastUpdate: &ts})
	groups := func() string { return *tbl.Results()[0].Rows[0].Columns[0].String }
	if g := groups(); g != "x" {
		t.Fatalf("first group %s", g)
	}
	// Inputs are never modified once given; this test does, to see whether the row is evaluated again.
	status["g"] = "y"
	ts2 := ts
	tbl.UpsertWEC(WEC{Name: "a", Labels: map[string]string{"l": "1"}, Status: status, LastUpdate: &ts2})
	if g := groups(); g != "x" {
		t.Fatalf("the same input re-evaluated the row: group %s", g)
	}
	for _, w := range []WEC{
		{Name: "a", Labels: map[string]string{"l": "1"}, Status: map[string]any{"g": "y"}, LastUpdate: &ts},
		{Name: "a", Labels: map[string]string{"l": "2"}, Status: status, LastUpdate: &ts},
		{Name: "a", Labels: map[string]string{"l": "1"}, Status: status, LastUpdate: new(ts.Add(time.Second))},
		{Name: "a", Labels: map[string]string{"l": "1"}, Status: status},
	} {
		tbl.UpsertWEC(WEC{Name: "a", Labels: map[string]string{"l": "1"}, Status: map[string]any{"g": "x"}, LastUpdate: &ts})
		if g := groups(); g != "x" {
			t.Fatalf("reset: group %s", g)
		}
		status["g"] = "y"
		tbl.UpsertWEC(w)
		if g := groups(); g != "y" {
			t.Errorf("input %+v left the row as it was: group %s", w, g)
		}
	}
}

func TestSameValue(t *testing.T) {
	m := map[string]any{"a": int64(1)}
	l := []any{"x", int64(2)}
	c := compactjson.Compact(m, nil)
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{m, m, true},
		{m, map[string]any{"a": int64(1)}, false}, // equal, not the same: evaluated again
		{map[string]any{}, map[string]any{}, true},
		{l, l, true},
		{l, l[:1], false},
		{l, []any{"x", int64(2)}, false},
		{"x", "x", true},
		{"x", m, false},
		{int64(1), float64(1), false},
		{m, nil, false},
		{nil, m, false},
		{float64(2.5), float64(2.5), true},
		{true, false, false},
		{c, c, true},
		{c, compactjson.Compact(m, nil), false}, // equal, not the same
		{c, m, false},
		{m, c, false},
		{c, nil, false},
	} {
		if got := sameValue(tc.a, tc.b); got != tc.want {
			t.Errorf("sameValue(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

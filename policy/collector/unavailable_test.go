package collector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

const oversizeText = "status not evaluated: the reported status is 300000 bytes, over the cap of 262144 bytes on a reported status"

// TestUnavailableStatusIsARowError pins what a WEC whose status cannot be evaluated (over the
// size cap) gets: its row is not evaluated — not selected, not counted, not aggregated — and it
// has one row error, on the column "", with the reason's exact text. When its status becomes
// available again, the row is evaluated and the error goes.
func TestUnavailableStatusIsARowError(t *testing.T) {
	c := newTestCompiler(t)
	sel := mustCompile(t, c, statusCollector("sel", withSelect("ready", "returned.status.ready")))
	cnt := mustCompile(t, c, statusCollector("cnt", withCount("n")))
	status := statusJSON(t, `{"ready": 2}`)
	tbl := NewTable(nil, []*Collector{sel, cnt})
	tbl.SetDestinations([]string{"a", "b"})
	tbl.UpsertWEC(wec("a", withStatus(status)))
	tbl.UpsertWEC(WEC{Name: "b", Unavailable: oversizeText})
	res := tbl.Results()

	wantErrs := []controlv1alpha1.RowEvaluationError{rowErr("b", "", oversizeText)}
	for _, r := range res {
		if d := cmp.Diff(wantErrs, r.RowErrors); d != "" {
			t.Errorf("%s: row errors (-want +got):\n%s", r.Name, d)
		}
	}
	// Results are in collector name order: cnt, sel.
	if want := []controlv1alpha1.StatusCombinationRow{row(vn("2"))}; !rowsEqual(res[1].Rows, want) {
		t.Errorf("sel: rows %+v, want %+v (the unavailable WEC is not a row)", res[0].Rows, want)
	}
	if want := []controlv1alpha1.StatusCombinationRow{row(vn("1"))}; !rowsEqual(res[0].Rows, want) {
		t.Errorf("cnt: rows %+v, want %+v (the unavailable WEC is not counted)", res[1].Rows, want)
	}

	tbl.UpsertWEC(wec("b", withStatus(statusJSON(t, `{"ready": 3}`))))
	res = tbl.Results()
	if len(res[0].RowErrors)+len(res[1].RowErrors) != 0 || !rowsEqual(res[0].Rows, []controlv1alpha1.StatusCombinationRow{row(vn("2"))}) {
		t.Errorf("after the status is available again: %+v, want 2 rows counted and no errors", res)
	}
}

// TestObjectBudgetBoundsAllTables pins the object's budget: each collector's own budget is far
// away (1 min), yet every comprehension of the object's Tables stops once the object's shared
// budget has passed, with a row error that names it.
func TestObjectBudgetBoundsAllTables(t *testing.T) {
	c, err := NewCompiler(WithTimeBudget(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	bomb := mustCompile(t, c, statusCollector("bomb", withAgg("s", controlv1alpha1.AggregatorTypeSum, bombSubject)))
	status := bombStatus(t)
	budget := NewObjectBudget(50 * time.Millisecond)
	defer budget.End()
	var results [][]controlv1alpha1.NamedStatusCombination
	for range 2 { // two pairs of one object
		tbl := NewTable(nil, []*Collector{bomb})
		tbl.SetObjectBudget(budget)
		var names []string
		for i := range 30 {
			names = append(names, fmt.Sprintf("w%02d", i))
		}
		tbl.SetDestinations(names)
		for _, n := range names {
			tbl.UpsertWEC(wec(n, withStatus(status)))
		}
		results = append(results, tbl.Results())
	}
	for i, res := range results {
		errs := res[0].RowErrors
		if len(errs) != MaxRowErrors {
			t.Fatalf("pair %d: %d row errors, want %d", i, len(errs), MaxRowErrors)
		}
		for _, e := range errs {
			if !strings.Contains(e.Error, "the object's time budget of 50ms") {
				t.Errorf("pair %d: row error %+v, want the object's time budget's", i, e)
			}
		}
	}
}

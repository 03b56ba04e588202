package collector

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// bombStatus is a reported status whose 1,000-element list makes bombSubject run for seconds per
// WEC before the runtime cost limit stops it.
func bombStatus(t *testing.T) any {
	items := make([]string, 1000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return statusJSON(t, `{"ready": true, "items": [`+strings.Join(items, ",")+`]}`)
}

const bombSubject = "returned.status.items.map(x, returned.status.items.filter(y, y < 2).size()).size()"

func TestTimeBudgetStopsComprehensions(t *testing.T) {
	c, err := NewCompiler(WithTimeBudget(50 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	bomb := mustCompile(t, c, statusCollector("bomb", withAgg("s", sum, bombSubject)))
	// A collector with a comprehension of its own, in the same Table: its budget is its own.
	ready := mustCompile(t, c, statusCollector("ready",
		withFilter("[returned.status].exists(s, s.ready)"), withCount("count")))
	status := bombStatus(t)
	var wecs []WEC
	for i := range 30 {
		wecs = append(wecs, wec(fmt.Sprintf("w%02d", i), withStatus(status)))
	}
	res := Evaluate(nil, wecs, []*Collector{bomb, ready})

	if got := res[0].RowErrors; len(got) != 20 { // the first 20, in WEC name order
		t.Fatalf("bomb: %d row errors, want 20: %+v", len(got), got)
	}
	for _, e := range res[0].RowErrors {
		if e.ColumnName != "s" || !strings.Contains(e.Error, "time budget of 50ms") {
			t.Errorf("bomb: row error %+v, want the time budget's", e)
		}
	}
	if want := []controlv1alpha1.StatusCombinationRow{row(vn("0"))}; !rowsEqual(res[0].Rows, want) {
		t.Errorf("bomb: rows %+v, want %+v (every subject failed)", res[0].Rows, want)
	}
	if len(res[1].RowErrors) != 0 || !rowsEqual(res[1].Rows, []controlv1alpha1.StatusCombinationRow{row(vn("30"))}) {
		t.Errorf("ready: %+v, want a count of 30 and no errors", res[1])
	}
}

// TestTimeBudgetRenewsWithEachRead pins that the deadline belongs to one evaluation: reading the
// results ends it, and the next update is evaluated with a new one. (The comprehension runs 200
// iterations, so it checks the deadline twice.) It runs on synctest's clock, which moves only
// while every goroutine waits: an evaluation takes no time on it, however slow the machine, and
// the sleep passes the budget exactly.
func TestTimeBudgetRenewsWithEachRead(t *testing.T) {
	synctest.Test(t, testTimeBudgetRenewsWithEachRead)
}

func testTimeBudgetRenewsWithEachRead(t *testing.T) {
	c, err := NewCompiler(WithTimeBudget(50 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	col := mustCompile(t, c, statusCollector("has-last",
		withFilter("returned.status.items.exists(x, x == 199)"), withCount("count")))
	items := make([]string, 200)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	list := statusJSON(t, `{"items": [`+strings.Join(items, ",")+`]}`)
	tbl := NewTable(nil, []*Collector{col})
	tbl.SetDestinations([]string{"w1"})
	tbl.UpsertWEC(wec("w1", withStatus(list)))
	if got := tbl.Results()[0]; len(got.RowErrors) != 0 {
		t.Fatalf("first read: %+v", got)
	}
	time.Sleep(60 * time.Millisecond) // longer than the budget: a deadline kept from the first read would have passed
	tbl.UpsertWEC(wec("w1", withStatus(statusJSON(t, `{"items": []}`))))
	tbl.UpsertWEC(wec("w1", withStatus(list)))
	got := tbl.Results()[0]
	if len(got.RowErrors) != 0 || !rowsEqual(got.Rows, []controlv1alpha1.StatusCombinationRow{row(vn("1"))}) {
		t.Errorf("second read: %+v, want a count of 1 and no errors", got)
	}
}

func rowsEqual(a, b []controlv1alpha1.StatusCombinationRow) bool {
	return cmp.Equal(a, b, resultOpts)
}

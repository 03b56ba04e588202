package sizebudget

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// randomCS is a CombinedStatus of 1–3 results with up to rows rows of cells up to cell bytes.
func randomCS(r *rand.Rand, rows, cell int) *controlv1alpha1.CombinedStatus {
	cs := &controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Name: "uid.uid", Namespace: "ns",
		Labels: map[string]string{controlv1alpha1.LabelCombinedStatusName: "d"}}}
	for i := range 1 + r.IntN(3) {
		res := controlv1alpha1.NamedStatusCombination{Name: fmt.Sprintf("c%d", i), ColumnNames: []string{"wec", "status"}}
		for j := range r.IntN(rows + 1) {
			s := fmt.Sprintf("wec%03d", j)
			v := strings.Repeat("x", r.IntN(cell+1))
			res.Rows = append(res.Rows, controlv1alpha1.StatusCombinationRow{Columns: []controlv1alpha1.Value{
				{Type: controlv1alpha1.TypeString, String: &s}, {Type: controlv1alpha1.TypeString, String: &v}}})
			if r.IntN(10) == 0 {
				res.AggregationErrors = append(res.AggregationErrors, controlv1alpha1.ErrorInColumn{ColumnName: "status", Error: "e", Row: int32(j)})
			}
		}
		if r.IntN(3) == 0 {
			res.RowErrors = []controlv1alpha1.RowEvaluationError{{WEC: controlv1alpha1.Destination{ClusterId: "wec000"}, ColumnName: "status", Error: "boom"}}
		}
		cs.Results = append(cs.Results, res)
	}
	return cs
}

// checkTrim checks the properties every trim must have: within budget (when it fits), rows a
// prefix of the input's (never a partial cell), a marker exactly on the results that lost rows.
func checkTrim(t *testing.T, in, out *controlv1alpha1.CombinedStatus, tr Trim, budget int) {
	t.Helper()
	if n := encodedLen(out); tr.Fits && n > budget {
		t.Fatalf("trimmed object %d bytes over budget %d", n, budget)
	}
	for i, r := range out.Results {
		src := in.Results[i]
		if len(r.Rows) > len(src.Rows) || !reflect.DeepEqual(r.Rows, src.Rows[:len(r.Rows)]) && len(r.Rows) > 0 {
			t.Fatalf("result %s: rows not a prefix of the input's", r.Name)
		}
		m, marked := ResultMarker(&r)
		if lost := len(r.Rows) < len(src.Rows); marked != lost {
			t.Fatalf("result %s: marker %v, rows lost %v", r.Name, marked, lost)
		}
		if marked && (int(m.Row) != len(r.Rows) || int(m.Count) != len(src.Rows)-len(r.Rows)) {
			t.Fatalf("result %s: marker %+v for %d of %d rows", r.Name, m, len(r.Rows), len(src.Rows))
		}
		for _, e := range r.AggregationErrors {
			if !IsMarker(e) && int(e.Row) >= len(r.Rows) {
				t.Fatalf("result %s: aggregation error about row %d left out", r.Name, e.Row)
			}
		}
	}
}

// TestResultsProperties: same input → same output; within budget; whole rows only; marked.
func TestResultsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		in := randomCS(r, 60, 400)
		before := in.DeepCopy()
		budget := MinBytes/8 + r.IntN(encodedLen(in)+1)
		out, tr := Results(in, budget)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("case %d: input modified", n)
		}
		out2, tr2 := Results(in.DeepCopy(), budget)
		if !reflect.DeepEqual(out, out2) || !reflect.DeepEqual(tr, tr2) {
			t.Fatalf("case %d: same input, different output", n)
		}
		if !tr.Fits {
			t.Fatalf("case %d: budget %d not met (%s)", n, budget, tr)
		}
		checkTrim(t, in, out, tr, budget)
	}
}

// TestResultsMonotone: more input (a row more, at each step) never yields an object over budget.
func TestResultsMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 200 {
		in := randomCS(r, 40, 300)
		budget := 4096 + r.IntN(20000)
		for grow := 0; grow < 5; grow++ {
			out, tr := Results(in, budget)
			if !tr.Fits {
				t.Fatalf("case %d: budget %d not met with %d bytes", n, budget, encodedLen(in))
			}
			checkTrim(t, in, out, tr, budget)
			// more input: a row appended to a random result
			i := r.IntN(len(in.Results))
			s := strings.Repeat("y", r.IntN(2000))
			in.Results[i].Rows = append(in.Results[i].Rows, controlv1alpha1.StatusCombinationRow{Columns: []controlv1alpha1.Value{
				{Type: controlv1alpha1.TypeString, String: &s}, {Type: controlv1alpha1.TypeNull}}})
		}
	}
}

// TestResultsFitUntouched: an object within budget is returned itself, unmarked.
func TestResultsFitUntouched(t *testing.T) {
	in := randomCS(rand.New(rand.NewPCG(5, 6)), 10, 10)
	out, tr := Results(in, DefaultBytes)
	if out != in || tr.Trimmed() {
		t.Fatalf("trimmed an object within budget: %s", tr)
	}
}

// TestResultsLargestFirst: rows go from the end of the result whose rows take the most bytes.
func TestResultsLargestFirst(t *testing.T) {
	cs := &controlv1alpha1.CombinedStatus{}
	for i, w := range []int{100, 1000} {
		res := controlv1alpha1.NamedStatusCombination{Name: fmt.Sprintf("c%d", i), ColumnNames: []string{"v"}}
		for range 10 {
			s := strings.Repeat("z", w)
			res.Rows = append(res.Rows, controlv1alpha1.StatusCombinationRow{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeString, String: &s}}})
		}
		cs.Results = append(cs.Results, res)
	}
	out, tr := Results(cs, encodedLen(cs)-3000)
	if len(out.Results[0].Rows) != 10 || len(out.Results[1].Rows) >= 10 || len(tr.Results) != 1 || tr.Results[0].Name != "c1" {
		t.Fatalf("want only c1 trimmed, got %s (rows %d, %d)", tr, len(out.Results[0].Rows), len(out.Results[1].Rows))
	}
	if !strings.Contains(tr.Results[0].Name, "c1") || tr.Results[0].Kept != 6 {
		t.Fatalf("want 6 rows of c1 kept, got %+v", tr.Results[0])
	}
}

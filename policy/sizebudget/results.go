package sizebudget

import (
	"fmt"
	"strings"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TrimmedError begins the error of the aggregation error that marks a trimmed result; its
// columnName is TrimmedColumn, its row the number of rows kept and its count the rows left out.
const TrimmedError = "rows left out: object size budget"

// TrimmedColumn is the columnName of the marker of a trimmed result: it is about whole rows.
const TrimmedColumn = ""

// ResultTrim says how many rows of a result were kept of how many.
type ResultTrim struct {
	Name        string
	Kept, Total int
}

// Trim is what Results did to a CombinedStatus.
type Trim struct {
	// Results are the results that lost rows, in result order.
	Results []ResultTrim
	// Size is the encoded size of the object before trimming; Budget the budget applied.
	Size, Budget int
	// Fits is false when the object is over budget even with every row, row error and
	// aggregation error left out (its metadata and column names alone are too large).
	Fits bool
}

// Trimmed reports whether anything was left out.
func (t Trim) Trimmed() bool { return len(t.Results) > 0 || !t.Fits }

// String is the trim as a sentence, for Events and logs.
func (t Trim) String() string {
	parts := make([]string, 0, len(t.Results))
	for _, r := range t.Results {
		parts = append(parts, fmt.Sprintf("%s: %d of %d rows left out", r.Name, r.Total-r.Kept, r.Total))
	}
	s := fmt.Sprintf("CombinedStatus of %d bytes over the object size budget of %d bytes", t.Size, t.Budget)
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	if !t.Fits {
		s += "; does not fit even without rows"
	}
	return s
}

// Marker is the aggregation error that says a result kept kept of total rows under budget.
func Marker(kept, total, budget int) controlv1alpha1.ErrorInColumn {
	return controlv1alpha1.ErrorInColumn{
		ColumnName: TrimmedColumn,
		Error:      fmt.Sprintf("%s of %d bytes: the last %d of %d rows left out", TrimmedError, budget, total-kept, total),
		Row:        int32(kept), Count: int32(total - kept), //nolint:gosec // row counts are far below 2^31
	}
}

// IsMarker reports whether e is the marker of a trimmed result.
func IsMarker(e controlv1alpha1.ErrorInColumn) bool {
	return e.ColumnName == TrimmedColumn && strings.HasPrefix(e.Error, TrimmedError)
}

// markerCost bounds what the marker adds to a result's encoding: the entry, its comma, and the
// aggregationErrors field when the result had none.
func markerCost(kept, total, budget int) int {
	return encodedLen(Marker(kept, total, budget)) + len(`,"aggregationErrors":[]`)
}

// Results returns cs within budget bytes of JSON encoding, and what it left out. The rule
// (docs/rules.md "Size budget"): while the object is over budget, the last row of the result
// whose rows take the most bytes (the first such result on a tie) is left out; a result that
// lost rows gets the Marker aggregation error, and loses its aggregation errors about rows it no
// longer has. Only whole rows go, so no cell is ever cut. If every row is gone and the object is
// still over budget, row errors and aggregation errors go too, and Trim.Fits tells whether even
// that fitted. cs is not modified; when it fits as it is, it is returned itself.
func Results(cs *controlv1alpha1.CombinedStatus, budget int) (*controlv1alpha1.CombinedStatus, Trim) {
	size := encodedLen(cs)
	t := Trim{Size: size, Budget: budget, Fits: true}
	if size <= budget {
		return cs, t
	}
	rs := cs.Results
	rowLen := make([][]int, len(rs))
	kept := make([]int, len(rs))
	bytes := make([]int, len(rs))
	marks := make([]int, len(rs))
	for i := range rs {
		rowLen[i] = make([]int, len(rs[i].Rows))
		for j := range rs[i].Rows {
			rowLen[i][j] = encodedLen(rs[i].Rows[j]) // its comma is the bound's slack
			bytes[i] += rowLen[i][j]
		}
		kept[i] = len(rs[i].Rows)
	}
	est := size // an upper bound of the trimmed object's size
	for est > budget {
		i := largest(bytes, kept)
		if i < 0 {
			break
		}
		kept[i]--
		bytes[i] -= rowLen[i][kept[i]]
		est -= rowLen[i][kept[i]]
		m := markerCost(kept[i], len(rs[i].Rows), budget)
		est += m - marks[i]
		marks[i] = m
	}
	out := &controlv1alpha1.CombinedStatus{TypeMeta: cs.TypeMeta, ObjectMeta: *cs.ObjectMeta.DeepCopy()}
	out.Results = make([]controlv1alpha1.NamedStatusCombination, len(rs))
	for i := range rs {
		out.Results[i] = trimResult(rs[i], kept[i], budget, est > budget)
		if kept[i] < len(rs[i].Rows) {
			t.Results = append(t.Results, ResultTrim{Name: rs[i].Name, Kept: kept[i], Total: len(rs[i].Rows)})
		}
	}
	t.Fits = encodedLen(out) <= budget
	return out, t
}

// largest is the index of the result with rows whose rows take the most bytes, or -1.
func largest(bytes, kept []int) int {
	best := -1
	for i := range bytes {
		if kept[i] > 0 && (best < 0 || bytes[i] > bytes[best]) {
			best = i
		}
	}
	return best
}

// trimResult is r with its first kept rows, the aggregation errors about those rows and the
// marker when rows were left out; bare also leaves out its row and aggregation errors.
func trimResult(r controlv1alpha1.NamedStatusCombination, kept, budget int, bare bool) controlv1alpha1.NamedStatusCombination {
	total := len(r.Rows)
	out := controlv1alpha1.NamedStatusCombination{Name: r.Name, ColumnNames: r.ColumnNames, Rows: r.Rows[:kept:kept]}
	if kept == 0 {
		out.Rows = nil
	}
	if !bare {
		out.RowErrors = r.RowErrors
		for _, e := range r.AggregationErrors {
			if kept == total || int(e.Row) < kept {
				out.AggregationErrors = append(out.AggregationErrors, e)
			}
		}
	}
	if kept < total {
		out.AggregationErrors = append(out.AggregationErrors, Marker(kept, total, budget))
	}
	return out
}

// ResultMarker returns the marker of a trimmed result, if r has one.
func ResultMarker(r *controlv1alpha1.NamedStatusCombination) (controlv1alpha1.ErrorInColumn, bool) {
	for _, e := range r.AggregationErrors {
		if IsMarker(e) {
			return e, true
		}
	}
	return controlv1alpha1.ErrorInColumn{}, false
}

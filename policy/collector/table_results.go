package collector

import (
	"sort"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// errorsOf appends the row errors of WEC name to out, up to MaxRowErrors.
func errorsOf(name string, errs []rowError, out []controlv1alpha1.RowEvaluationError) []controlv1alpha1.RowEvaluationError {
	for _, e := range errs {
		if len(out) == MaxRowErrors {
			break
		}
		out = append(out, controlv1alpha1.RowEvaluationError{
			WEC: controlv1alpha1.Destination{ClusterId: name}, ColumnName: e.column, Error: e.err,
		})
	}
	return out
}

// compute evaluates the pending rows and builds the collector's result.
func (cs *colState) compute(t *Table) controlv1alpha1.NamedStatusCombination {
	cs.flush(t)
	res := controlv1alpha1.NamedStatusCombination{Name: cs.col.name, ColumnNames: cs.col.columnNames}
	if cs.col.isSelect() {
		cs.selectRows(t, &res)
		return res
	}
	cs.rowErrors(t, &res)
	cs.aggregateRows(&res)
	return res
}

// selectRows adds a select collector's rows, up to the limit, with their row errors: the rows'
// own (filter) errors and those of the cells of the rows within the limit.
func (cs *colState) selectRows(t *Table, res *controlv1alpha1.NamedStatusCombination) {
	seen := 0 // rows with errs seen so far
	for i := range cs.rows {
		r := &cs.rows[i]
		full := int64(len(res.Rows)) >= cs.col.limit
		if full && (seen == cs.errRows || len(res.RowErrors) == MaxRowErrors) {
			break
		}
		if r.kept && !full {
			cs.evalCells(t, i)
			res.Rows = append(res.Rows, controlv1alpha1.StatusCombinationRow{Columns: r.cells().values})
			res.RowErrors = errorsOf(t.dests[i], r.cells().errs, res.RowErrors)
		}
		if r.hasErrs() {
			seen++
			res.RowErrors = errorsOf(t.dests[i], r.errs(), res.RowErrors)
		}
	}
}

// rowErrors adds an aggregation's row errors, in WEC-name order.
func (cs *colState) rowErrors(t *Table, res *controlv1alpha1.NamedStatusCombination) {
	for i, seen := 0, 0; i < len(cs.rows) && seen < cs.errRows && len(res.RowErrors) < MaxRowErrors; i++ {
		if r := &cs.rows[i]; r.hasErrs() {
			seen++
			res.RowErrors = errorsOf(t.dests[i], r.errs(), res.RowErrors)
		}
	}
}

// aggregateRows adds an aggregation's rows, one per group up to the limit, with their
// aggregation errors.
func (cs *colState) aggregateRows(res *controlv1alpha1.NamedStatusCombination) {
	for gi, g := range cs.sortedGroups() {
		row := controlv1alpha1.StatusCombinationRow{}
		for _, k := range cs.groupKey(g) {
			row.Columns = append(row.Columns, k.toValue())
		}
		for k, ag := range cs.col.aggregates {
			row.Columns = append(row.Columns, g.value(cs, k, ag.typ))
			if n := g.aggs[k].bad; n > 0 {
				res.AggregationErrors = append(res.AggregationErrors, controlv1alpha1.ErrorInColumn{
					ColumnName: ag.name, Error: g.firstBad(cs, k), Row: int32(gi), Count: int32(n),
				})
			}
		}
		res.Rows = append(res.Rows, row)
	}
}

// sortedGroups returns the groups in key order, at most the limit; without groupBy there is
// always exactly one.
func (cs *colState) sortedGroups() []*group {
	groups := make([]*group, 0, len(cs.groups))
	for _, g := range cs.groups {
		groups = append(groups, g)
	}
	if len(cs.col.groupBy) == 0 && len(groups) == 0 {
		groups = append(groups, newGroup("", len(cs.col.aggregates))) // always exactly one row
	}
	sort.Slice(groups, func(i, j int) bool { return compareKeys(cs.groupKey(groups[i]), cs.groupKey(groups[j])) < 0 })
	if int64(len(groups)) > cs.col.limit {
		groups = groups[:cs.col.limit]
	}
	return groups
}

// groupKey is the key values a group shows: those of its first WEC by name.
func (cs *colState) groupKey(g *group) []jvalue {
	if g.count == 0 {
		return nil
	}
	return cs.key(g.rep)
}

func compareKeys(a, b []jvalue) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareValues(&a[i], &b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

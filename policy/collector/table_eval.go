package collector

import (
	"fmt"

	"github.com/google/cel-go/common/types"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// rowError is a row error of one WEC, without the WEC name (the row knows it).
type rowError struct {
	column string
	err    string
}

// filterRow evaluates the filter: true keeps the row; false or null drops it; anything else drops it
// with a row error on the column "".
func filterRow(c *Collector, a *activation, b *timeBudget) (bool, []rowError) {
	if c.filter == nil {
		return true, nil
	}
	out, err := c.filter.eval(a, b)
	if err != nil {
		return false, []rowError{{"", err.Error()}}
	}
	switch v := out.(type) {
	case types.Bool:
		return bool(v), nil
	case bool:
		return v, nil
	case types.Null, nil:
		return false, nil
	}
	return false, []rowError{{"", fmt.Sprintf("filter evaluated to %s, not bool", toRef(out).Type().TypeName())}}
}

// flush evaluates the pending rows.
func (cs *colState) flush(t *Table) {
	if cs.pending == 0 {
		return
	}
	for i := range cs.rows {
		if cs.rows[i].pending {
			cs.rows[i].pending = false
			cs.evalRow(t, i)
		}
	}
	cs.pending = 0
}

// evalRow evaluates row i, which must be zero.
func (cs *colState) evalRow(t *Table, i int) {
	cs.evalRowExprs(t, i)
	if cs.rows[i].hasErrs() {
		cs.errRows++
	}
}

// evalRowExprs evaluates row i's filter and, for an aggregation, its group key values and
// subjects, and adds a kept row whose expressions all succeed to its group.
func (cs *colState) evalRowExprs(t *Table, i int) {
	if why := t.rows[i].Unavailable; why != "" {
		r := &cs.rows[i]
		r.kept = false
		r.extra().errs = []rowError{{"", why}}
		return
	}
	c, a, r := cs.col, t.activate(i), &cs.rows[i]
	var errs []rowError
	r.kept, errs = filterRow(c, a, &cs.budget)
	if errs != nil {
		r.extra().errs = errs
	}
	if !r.kept || c.isSelect() {
		return
	}
	key := cs.key(i)
	if !cs.evalKey(a, r, key) {
		clear(key)
		return
	}
	subjects := cs.subjects(i)
	if !cs.evalSubjects(a, r, subjects) {
		// A row with an evaluation error is left out of the aggregation input as a whole (docs/rules.md "Collectors"):
		// COUNT does not count it either.
		clear(key)
		clear(subjects)
		return
	}
	cs.keyBuf = cs.keyBuf[:0]
	for k := range key {
		cs.keyBuf = appendKey(cs.keyBuf, &key[k])
	}
	cs.join(i, cs.keyBuf)
}

// evalKey evaluates the groupBy expressions into key, adding a row error to r for each that
// fails; it reports whether all succeeded.
func (cs *colState) evalKey(a *activation, r *rowState, key []jvalue) bool {
	keyOK := true
	for k, g := range cs.col.groupBy {
		out, err := g.prg.eval(a, &cs.budget)
		if err == nil {
			key[k], err = fromAny(out)
		}
		if err != nil {
			r.addErr(rowError{g.name, err.Error()})
			keyOK = false
		}
	}
	return keyOK
}

// evalSubjects evaluates the aggregation subjects into subjects (COUNT has none), adding a row
// error to r for each that fails; it reports whether all succeeded.
func (cs *colState) evalSubjects(a *activation, r *rowState, subjects []subject) bool {
	subjectsOK := true
	for _, ag := range cs.col.aggregates {
		if ag.prg == nil {
			continue
		}
		out, err := ag.prg.eval(a, &cs.budget)
		if err != nil {
			r.addErr(rowError{ag.name, err.Error()})
			subjectsOK = false
			continue
		}
		subjects[ag.slot] = classifyAny(out)
	}
	return subjectsOK
}

// join adds row i to the group with the given key.
func (cs *colState) join(i int, key []byte) {
	g, ok := cs.groups[string(key)]
	if !ok {
		g = newGroup(string(key), len(cs.col.aggregates))
		cs.groups[g.keyStr] = g
	}
	g.add(cs, i)
}

// evalCells evaluates a select row's cells: a failing cell is Null with a row error.
func (cs *colState) evalCells(t *Table, i int) {
	r := &cs.rows[i]
	if r.cells() != nil {
		return
	}
	c := &selectCells{values: make([]controlv1alpha1.Value, len(cs.col.selects))}
	r.extra().cells = c
	for k, s := range cs.col.selects {
		out, err := s.prg.eval(t.activate(i), &cs.budget)
		var v jvalue
		if err == nil {
			v, err = fromAny(out)
		}
		if err != nil {
			c.values[k] = nullValue()
			c.errs = append(c.errs, rowError{s.name, err.Error()})
			continue
		}
		c.values[k] = v.toValue()
	}
}

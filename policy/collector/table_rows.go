package collector

import (
	"slices"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// colState is a Table's cache for one collector.
type colState struct {
	col     *Collector
	rows    []rowState // aligned with Table.dests
	errRows int        // rows with errs
	pending int        // pending rows
	groups  map[string]*group
	keyBuf  []byte

	// The rows' group key values and aggregation subjects, len(groupBy) and nsubjects per row
	// (COUNT has none), aligned with rows (key and subjects): set for the rows in a group, zero
	// for the others.
	keys  []jvalue
	subjs []subject

	dirty  bool
	result controlv1alpha1.NamedStatusCombination

	budget timeBudget
}

// rowState is one WEC's row of one collector. A Table has a row per WEC and collector, so what
// only some rows need sits behind pointers, and the key values and subjects in colState.
type rowState struct {
	pending bool // a new destination's row, evaluated when results are next read
	kept    bool

	// aggregation: the row's group (nil: in none); its key values and subjects are
	// colState.key(i) and subjects(i)
	group *group

	x *rowExtra // nil: no errors, no cells
}

// rowExtra is what few rows have.
type rowExtra struct {
	errs []rowError // nil: none; else in column order: filter, groupBy, subjects

	// select: cells are evaluated only for rows within the limit, when results are read (nil
	// until then); their errors count only while the row is within the limit.
	cells *selectCells
}

func (r *rowState) extra() *rowExtra {
	if r.x == nil {
		r.x = &rowExtra{}
	}
	return r.x
}

// hasErrs reports whether the row has errors.
func (r *rowState) hasErrs() bool { return r.x != nil && r.x.errs != nil }

func (r *rowState) errs() []rowError {
	if r.x == nil {
		return nil
	}
	return r.x.errs
}

// cells returns the row's evaluated cells (nil: not evaluated).
func (r *rowState) cells() *selectCells {
	if r.x == nil {
		return nil
	}
	return r.x.cells
}

func (r *rowState) addErr(e rowError) {
	x := r.extra()
	x.errs = append(x.errs, e)
}

// key returns row i's group key values (len(groupBy)); valid while the row is in a group.
func (cs *colState) key(i int) []jvalue {
	n := len(cs.col.groupBy)
	return cs.keys[i*n : (i+1)*n : (i+1)*n]
}

// subjects returns row i's aggregation subjects (aggregate.slot indexes them); valid while the
// row is in a group.
func (cs *colState) subjects(i int) []subject {
	n := cs.col.nsubjects
	return cs.subjs[i*n : (i+1)*n : (i+1)*n]
}

// clearRow zeroes row i with its key values and subjects (which may hold strings).
func (cs *colState) clearRow(i int) {
	cs.rows[i] = rowState{}
	clear(cs.key(i))
	clear(cs.subjects(i))
}

// allocRows makes rows, key values and subjects for n rows.
func (cs *colState) allocRows(n int) {
	cs.rows = make([]rowState, n)
	if cs.col.isSelect() {
		cs.keys, cs.subjs = nil, nil
		return
	}
	cs.keys = make([]jvalue, n*len(cs.col.groupBy))
	cs.subjs = make([]subject, n*cs.col.nsubjects)
}

// selectCells are a select row's evaluated cells and their errors.
type selectCells struct {
	values []controlv1alpha1.Value
	errs   []rowError
}

// reset re-evaluates every row.
// Every row becomes pending: rows are evaluated when results are next read (expandPending builds
// what the collectors' evaluations of one row share once).
func (cs *colState) reset(t *Table) {
	cs.allocRows(len(t.dests))
	cs.groups = map[string]*group{}
	cs.errRows = 0
	for i := range cs.rows {
		cs.rows[i].pending = true
	}
	cs.pending = len(cs.rows)
	cs.dirty = true
}

// realign moves cached rows to the new destination order, marks rows of new destinations pending
// (so that a WEC given to UpsertWEC right after SetDestinations is evaluated once), and rebuilds
// the groups from the cached rows.
func (cs *colState) realign(t *Table, oldDests []string) {
	old := colState{col: cs.col, rows: cs.rows, keys: cs.keys, subjs: cs.subjs}
	cs.allocRows(len(t.dests))
	cs.groups = map[string]*group{}
	cs.errRows = 0
	cs.pending = 0
	for i, name := range t.dests {
		j, ok := slices.BinarySearch(oldDests, name)
		if !ok {
			cs.rows[i].pending = true
			cs.pending++
			continue
		}
		cs.rows[i] = old.rows[j]
		copy(cs.key(i), old.key(j))
		copy(cs.subjects(i), old.subjects(j))
		if cs.rows[i].pending {
			cs.pending++
			continue
		}
		if cs.rows[i].hasErrs() {
			cs.errRows++
		}
		if g := cs.rows[i].group; g != nil {
			cs.rows[i].group = nil
			cs.join(i, []byte(g.keyStr))
		}
	}
	cs.dirty = true
}

// update re-evaluates one row (a pending row stays pending: it will be evaluated with its newest
// input).
func (cs *colState) update(t *Table, i int) {
	cs.dirty = true
	if cs.rows[i].pending {
		return
	}
	if g := cs.rows[i].group; g != nil {
		g.remove(cs, i)
		if g.count == 0 && len(cs.col.groupBy) > 0 {
			delete(cs.groups, g.keyStr)
		}
	}
	if cs.rows[i].hasErrs() {
		cs.errRows--
	}
	cs.clearRow(i)
	cs.evalRow(t, i)
}

package collector

import (
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// MaxRowErrors is the most row errors a result holds (the first ones in WEC-name order).
const MaxRowErrors = 20

// WEC is one destination's row input.
type WEC struct {
	Name       string
	Labels     map[string]string // inventory labels
	Status     any               // decoded JSON of the reported status (after ContentClassifier pruning), plain or compact (compactjson); nil = reported nothing
	LastUpdate *time.Time        // propagation.lastReturnedUpdateTimestamp; nil = absent; ignored when Status is nil
}

// Table evaluates a set of collectors for one (workload object, BindingPolicy) pair,
// incrementally: every WEC's expression results are cached, so UpsertWEC re-evaluates one WEC only,
// and aggregates are updated from the cached values.
//
// A Table is not safe for concurrent use; the controller uses each Table from one goroutine at a
// time. The Collectors it holds may be shared.
type Table struct {
	obj        map[string]any
	collectors []*colState     // by collector name
	dests      []string        // sorted, unique
	rows       []WEC           // aligned with dests; a destination not given has its name only
	given      []bool          // aligned with dests: the destination's input was given (UpsertWEC)
	others     map[string]*WEC // the inputs given of WECs that are not destinations
	act        activation      // the CEL variables of row actRow (one row is evaluated at a time)
	expanded   []any           // while Results runs: rows' statuses expanded once for several collectors (expandPending)
	actRow     int             // -1: act holds no row
}

// NewTable returns a Table for the workload object obj (without .status) and the collectors.
// Call SetDestinations and UpsertWEC to give it rows.
func NewTable(obj map[string]any, collectors []*Collector) *Table {
	t := &Table{obj: obj, others: map[string]*WEC{}, actRow: -1}
	t.SetCollectors(collectors)
	return t
}

// SetObject replaces the workload object and re-evaluates all rows.
func (t *Table) SetObject(obj map[string]any) {
	t.obj = obj
	for _, cs := range t.collectors {
		cs.reset(t)
	}
}

// SetCollectors replaces the collectors. Collectors that the Table already had (the same
// *Collector, as a Compiler returns for an unchanged spec) keep their cached rows.
func (t *Table) SetCollectors(collectors []*Collector) {
	old := map[*Collector]*colState{}
	for _, cs := range t.collectors {
		old[cs.col] = cs
	}
	t.collectors = t.collectors[:0:0]
	for _, c := range collectors {
		cs, ok := old[c]
		if ok {
			delete(old, c)
		} else {
			cs = &colState{col: c, budget: timeBudget{limit: c.timeBudget}}
			cs.reset(t)
		}
		t.collectors = append(t.collectors, cs)
	}
	for _, cs := range old {
		cs.budget.end()
	}
	sort.SliceStable(t.collectors, func(i, j int) bool { return t.collectors[i].col.name < t.collectors[j].col.name })
}

// SetDestinations sets the WECs of the pair. A destination that UpsertWEC has not been told about
// has reported nothing. Rows of WECs that stay destinations keep their cached results; rows of new
// destinations are evaluated when results are next read.
func (t *Table) SetDestinations(names []string) {
	dests := slices.Clone(names)
	slices.Sort(dests)
	dests = slices.Compact(dests)
	if slices.Equal(dests, t.dests) {
		return
	}
	old, oldRows, oldGiven := t.dests, t.rows, t.given
	for i, name := range old { // inputs of WECs that stop being destinations are kept
		if oldGiven[i] {
			if _, ok := slices.BinarySearch(dests, name); !ok {
				w := oldRows[i] // a copy: a pointer into oldRows would keep all of it
				t.others[name] = &w
			}
		}
	}
	t.dests = dests
	t.rows = make([]WEC, len(dests))
	t.given = make([]bool, len(dests))
	t.actRow = -1
	for i, name := range dests {
		if j, ok := slices.BinarySearch(old, name); ok {
			t.rows[i], t.given[i] = oldRows[j], oldGiven[j]
		} else if w, ok := t.others[name]; ok {
			t.rows[i], t.given[i] = *w, true
			delete(t.others, name)
		} else {
			t.rows[i] = WEC{Name: name}
		}
	}
	for _, cs := range t.collectors {
		cs.realign(t, old)
	}
}

// destIndex returns the index of a destination in t.dests.
func (t *Table) destIndex(name string) (int, bool) {
	return slices.BinarySearch(t.dests, name)
}

// UpsertWEC sets one WEC's input and, when it is a destination, re-evaluates that WEC's row only.
// An input the same as the WEC's previous one (see sameInput) changes nothing: inputs are never
// modified once given, so the same status value is the same status.
func (t *Table) UpsertWEC(w WEC) {
	i, dest := t.destIndex(w.Name)
	if !dest {
		if old, ok := t.others[w.Name]; !ok || !sameInput(old, &w) {
			t.others[w.Name] = &w
		}
		return
	}
	if t.given[i] && sameInput(&t.rows[i], &w) {
		return
	}
	t.rows[i], t.given[i] = w, true
	t.changed(i)
}

// changed re-evaluates row i, whose input was replaced.
func (t *Table) changed(i int) {
	if t.actRow == i {
		t.actRow = -1
	}
	for _, cs := range t.collectors {
		cs.update(t, i)
	}
}

// RemoveWEC forgets a WEC's input: if it is a destination, it has now reported nothing.
func (t *Table) RemoveWEC(name string) {
	i, dest := t.destIndex(name)
	if !dest {
		delete(t.others, name)
		return
	}
	if !t.given[i] {
		return
	}
	t.rows[i], t.given[i] = WEC{Name: name}, false
	t.changed(i)
}

// Inputs returns the names of the WECs given to UpsertWEC and not removed since, destinations or not.
func (t *Table) Inputs() iter.Seq[string] {
	return func(yield func(string) bool) {
		for i, name := range t.dests {
			if t.given[i] && !yield(name) {
				return
			}
		}
		for name := range t.others {
			if !yield(name) {
				return
			}
		}
	}
}

// Results returns one result per collector, by collector name, as the CombinedStatus holds them.
// The results share memory with the Table's cache: do not modify them.
func (t *Table) Results() []controlv1alpha1.NamedStatusCombination {
	t.expandPending()
	out := make([]controlv1alpha1.NamedStatusCombination, len(t.collectors))
	for i, cs := range t.collectors {
		if cs.dirty {
			cs.result = cs.compute(t)
			cs.dirty = false
		}
		cs.budget.end()
		out[i] = cs.result
	}
	t.act.release()
	t.expanded = nil
	return out
}

// Evaluate is the one-shot form used by `statusfold eval`: wecs are the destinations, with their
// inputs (when a name repeats, the last input counts).
func Evaluate(obj map[string]any, wecs []WEC, collectors []*Collector) []controlv1alpha1.NamedStatusCombination {
	byName := func(a, b WEC) int { return strings.Compare(a.Name, b.Name) }
	sorted := wecs
	if !slices.IsSortedFunc(wecs, byName) {
		sorted = slices.Clone(wecs)
		slices.SortStableFunc(sorted, byName)
	}
	// The rows are set directly; this Table is never updated.
	t := &Table{obj: obj, dests: make([]string, 0, len(sorted)), rows: make([]WEC, 0, len(sorted)), actRow: -1}
	for i := range sorted {
		if i+1 < len(sorted) && sorted[i+1].Name == sorted[i].Name {
			continue
		}
		t.dests = append(t.dests, sorted[i].Name)
		t.rows = append(t.rows, sorted[i])
	}
	t.given = make([]bool, len(t.rows))
	for i := range t.given {
		t.given[i] = true
	}
	t.SetCollectors(collectors)
	return t.Results()
}

// activate returns the CEL variables of row i. A Table keeps only its rows' plain inputs (a WEC
// each) and builds the variables of the row being evaluated in its one activation, kept while
// the same row is evaluated for each collector: an activation per WEC would cost memory per WEC
// between evaluations. What an expression returns is converted to plain values (fromAny,
// classifyAny) before the next row's variables replace these.
func (t *Table) activate(i int) *activation {
	if t.actRow != i {
		status := any(nil)
		if t.expanded != nil {
			status = t.expanded[i]
		}
		if status == nil {
			status = compactjson.Expand(t.rows[i].Status)
		}
		t.act.init(t, t.rows[i], status)
		t.actRow = i
	}
	return &t.act
}

// sameInput reports whether two inputs of a WEC are the same: the same name, labels, time and
// status value — the same map, list or compact object (inputs are never modified), or an equal
// scalar. A status decoded again from the same JSON is a different value: the row is evaluated
// again, as for a change.
func sameInput(a, b *WEC) bool {
	if a.Name != b.Name || !maps.Equal(a.Labels, b.Labels) || !sameValue(a.Status, b.Status) {
		return false
	}
	if a.LastUpdate == nil || b.LastUpdate == nil {
		return a.LastUpdate == b.LastUpdate
	}
	return a.LastUpdate.Equal(*b.LastUpdate)
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && (len(x) == 0 || reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer())
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case *compactjson.Object:
		y, ok := b.(*compactjson.Object)
		return ok && x == y
	case string, bool, int64, float64:
		return a == b // b of another type (even a map) compares unequal without a panic
	}
	return false
}

// activation holds one WEC's CEL variables. The object-typed variables are fieldsVals inside it,
// which convert a field to a CEL value on first use (so an activation is not safe for concurrent
// use); `obj` is the Table's plain map, which CEL reads directly.
type activation struct {
	t                                *Table
	name                             string // the WEC name, which inventory.name points at
	inventory, returned, propagation fieldsVal
}

var _ interpreter.Activation = (*activation)(nil)

// noLabels is the labels of a WEC without inventory labels; CEL never modifies its inputs.
var noLabels = map[string]string{}

// init sets an activation's variables (dropping those of its previous row). The activation must
// not be copied afterwards (its inventory points at its name).
func (a *activation) init(t *Table, w WEC, status any) {
	labels := w.Labels
	if labels == nil {
		labels = noLabels
	}
	a.t, a.name = t, w.Name
	a.inventory = fieldsVal{names: &inventoryFields, raw: [2]any{&a.name, labels}, present: [2]bool{true, true}}
	a.returned = fieldsVal{names: &returnedFields, raw: [2]any{status}, present: [2]bool{true}}
	a.propagation = fieldsVal{names: &propagationFields}
	if w.LastUpdate != nil && w.Status != nil { // a WEC whose status is null has reported nothing
		a.propagation.raw[0], a.propagation.present[0] = types.Timestamp{Time: w.LastUpdate.UTC()}, true
	}
}

// release drops the CEL values made while the activation's row was evaluated (they only wrap the
// plain inputs), so that a Table does not hold them between evaluations.
func (a *activation) release() {
	a.inventory.vals, a.returned.vals, a.propagation.vals = [2]ref.Val{}, [2]ref.Val{}, [2]ref.Val{}
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varInventory:
		return &a.inventory, true
	case varObj:
		return a.t.obj, true
	case varReturned:
		return &a.returned, true
	case varPropagation:
		return &a.propagation, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// rowError is a row error of one WEC, without the WEC name (the row knows it).
type rowError struct {
	column string
	err    string
}

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

// expandPending expands, once, the statuses of the rows that more than one collector has pending:
// each collector evaluates its pending rows in turn (its time budget covers its own rows only),
// and a row's variables are built again for each, so without it a row's status would be expanded
// once per collector. Results drops them when it is done.
func (t *Table) expandPending() {
	n := 0
	for _, cs := range t.collectors {
		if cs.pending > 0 {
			n++
		}
	}
	if n < 2 {
		return
	}
	for i := range t.dests {
		if _, compact := t.rows[i].Status.(*compactjson.Object); !compact {
			continue
		}
		for _, cs := range t.collectors {
			if cs.rows[i].pending {
				if t.expanded == nil {
					t.expanded = make([]any, len(t.dests))
				}
				t.expanded[i] = compactjson.Expand(t.rows[i].Status)
				break
			}
		}
	}
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

func (cs *colState) evalRowExprs(t *Table, i int) {
	c, a, r := cs.col, t.activate(i), &cs.rows[i]
	var errs []rowError
	r.kept, errs = filterRow(c, a, &cs.budget)
	if errs != nil {
		r.extra().errs = errs
	}
	if !r.kept || c.isSelect() {
		return
	}
	keyOK := true
	key := cs.key(i)
	for k, g := range c.groupBy {
		out, err := g.prg.eval(a, &cs.budget)
		if err == nil {
			key[k], err = fromAny(out)
		}
		if err != nil {
			r.addErr(rowError{g.name, err.Error()})
			keyOK = false
		}
	}
	if !keyOK {
		clear(key)
		return
	}
	subjects := cs.subjects(i)
	subjectsOK := true
	for _, ag := range c.aggregates {
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
	if !subjectsOK {
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

func (cs *colState) compute(t *Table) controlv1alpha1.NamedStatusCombination {
	cs.flush(t)
	res := controlv1alpha1.NamedStatusCombination{Name: cs.col.name, ColumnNames: cs.col.columnNames}
	if cs.col.isSelect() {
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
		return res
	}
	for i, seen := 0, 0; i < len(cs.rows) && seen < cs.errRows && len(res.RowErrors) < MaxRowErrors; i++ {
		if r := &cs.rows[i]; r.hasErrs() {
			seen++
			res.RowErrors = errorsOf(t.dests[i], r.errs(), res.RowErrors)
		}
	}
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
	for gi, g := range groups {
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
	return res
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

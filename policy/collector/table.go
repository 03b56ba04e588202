package collector

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// MaxRowErrors is the most row errors a result holds (the first ones in WEC-name order).
const MaxRowErrors = 20

// WEC is one destination's row input.
type WEC struct {
	Name       string
	Labels     map[string]string // inventory labels
	Status     any               // decoded JSON of the reported status (after ContentClassifier pruning); nil = reported nothing
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
	collectors []*colState // by collector name
	dests      []string    // sorted, unique
	destIdx    map[string]int
	inputs     map[string]*activation // every WEC given to UpsertWEC, destination or not
	rows       []*activation          // aligned with dests
}

// NewTable returns a Table for the workload object obj (without .status) and the collectors.
// Call SetDestinations and UpsertWEC to give it rows.
func NewTable(obj map[string]any, collectors []*Collector) *Table {
	t := &Table{obj: obj, destIdx: map[string]int{}, inputs: map[string]*activation{}}
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
	oldIdx := t.destIdx
	t.dests = dests
	t.destIdx = make(map[string]int, len(dests))
	t.rows = make([]*activation, len(dests))
	for i, name := range dests {
		t.destIdx[name] = i
		t.rows[i] = t.input(name)
	}
	for _, cs := range t.collectors {
		cs.realign(t, oldIdx)
	}
}

// UpsertWEC sets one WEC's input and, when it is a destination, re-evaluates that WEC's row only.
func (t *Table) UpsertWEC(w WEC) {
	a := newActivation(t, w)
	t.inputs[w.Name] = a
	if i, ok := t.destIdx[w.Name]; ok {
		t.rows[i] = a
		for _, cs := range t.collectors {
			cs.update(t, i)
		}
		a.release()
	}
}

// RemoveWEC forgets a WEC's input: if it is a destination, it has now reported nothing.
func (t *Table) RemoveWEC(name string) {
	if _, ok := t.inputs[name]; !ok {
		return
	}
	delete(t.inputs, name)
	if i, ok := t.destIdx[name]; ok {
		t.rows[i] = t.input(name)
		for _, cs := range t.collectors {
			cs.update(t, i)
		}
		t.rows[i].release()
	}
}

// Results returns one result per collector, by collector name, as the CombinedStatus holds them.
// The results share memory with the Table's cache: do not modify them.
func (t *Table) Results() []controlv1alpha1.NamedStatusCombination {
	out := make([]controlv1alpha1.NamedStatusCombination, len(t.collectors))
	flushed := false
	for i, cs := range t.collectors {
		flushed = flushed || cs.pending > 0
		if cs.dirty {
			cs.result = cs.compute(t)
			cs.dirty = false
		}
		cs.budget.end()
		out[i] = cs.result
	}
	if flushed { // pending rows were evaluated: every row may hold CEL values now
		for _, a := range t.rows {
			a.release()
		}
	}
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
	// The rows are set directly; this Table is never updated, so it needs no name index. The
	// activations are allocated at once.
	t := &Table{obj: obj, dests: make([]string, 0, len(sorted)), rows: make([]*activation, 0, len(sorted))}
	acts := make([]activation, len(sorted))
	for i, w := range sorted {
		if i+1 < len(sorted) && sorted[i+1].Name == w.Name {
			continue
		}
		acts[i].init(t, w)
		t.dests = append(t.dests, w.Name)
		t.rows = append(t.rows, &acts[i])
	}
	t.SetCollectors(collectors)
	return t.Results()
}

// input returns the known input of a WEC, or a "reported nothing" input.
func (t *Table) input(name string) *activation {
	if a, ok := t.inputs[name]; ok {
		return a
	}
	return newActivation(t, WEC{Name: name})
}

// activation holds one WEC's CEL variables, built once per update. The object-typed variables are
// fieldsVals inside it, which convert a field to a CEL value on first use (so an activation is not
// safe for concurrent use); `obj` is the Table's plain map, which CEL reads directly.
type activation struct {
	t                                *Table
	name                             string // the WEC name, which inventory.name points at
	inventory, returned, propagation fieldsVal
}

var _ interpreter.Activation = (*activation)(nil)

// noLabels is the labels of a WEC without inventory labels; CEL never modifies its inputs.
var noLabels = map[string]string{}

func newActivation(t *Table, w WEC) *activation {
	a := &activation{}
	a.init(t, w)
	return a
}

// init sets a zero activation's variables. The activation must not be copied afterwards (its
// inventory points at its name).
func (a *activation) init(t *Table, w WEC) {
	labels := w.Labels
	if labels == nil {
		labels = noLabels
	}
	a.t, a.name = t, w.Name
	a.inventory = fieldsVal{names: &inventoryFields, raw: [2]any{&a.name, labels}, present: [2]bool{true, true}}
	a.returned = fieldsVal{names: &returnedFields, raw: [2]any{w.Status}, present: [2]bool{true}}
	a.propagation = fieldsVal{names: &propagationFields}
	if w.LastUpdate != nil && w.Status != nil { // a WEC whose status is null has reported nothing
		a.propagation.raw[0], a.propagation.present[0] = types.Timestamp{Time: w.LastUpdate.UTC()}, true
	}
}

// release drops the CEL values made while the activation's row was evaluated. They only wrap
// the plain inputs (no copy) and are made again when the row is next evaluated; a Table keeps one
// activation per WEC, so holding them would cost memory per WEC between evaluations. Select cells
// evaluated while results are read (at most limit rows) may keep theirs until the row changes.
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

	// Arenas for the rows' key values and subjects when all rows are evaluated at once.
	keyArena  []jvalue
	subjArena []subject

	dirty  bool
	result controlv1alpha1.NamedStatusCombination

	budget timeBudget
}

type rowState struct {
	pending bool // a new destination's row, evaluated when results are next read
	kept    bool
	errs    []rowError // in column order: filter, groupBy, subjects

	// select: cells are evaluated only for rows within the limit, when results are read (nil
	// until then); their errors count only while the row is within the limit. Behind a pointer,
	// so that rows beyond the limit and aggregation rows do not hold the fields (a Table has a
	// row per WEC and collector).
	cells *selectCells

	// aggregation
	group    *group
	key      []jvalue
	subjects []subject
}

// selectCells are a select row's evaluated cells and their errors.
type selectCells struct {
	values []controlv1alpha1.Value
	errs   []rowError
}

// reset re-evaluates every row.
func (cs *colState) reset(t *Table) {
	cs.rows = make([]rowState, len(t.dests))
	cs.groups = map[string]*group{}
	cs.errRows = 0
	if !cs.col.isSelect() {
		cs.keyArena = make([]jvalue, len(t.dests)*len(cs.col.groupBy))
		cs.subjArena = make([]subject, len(t.dests)*len(cs.col.aggregates))
	}
	for i := range cs.rows {
		cs.evalRow(t, i)
	}
	cs.dirty = true
}

// realign moves cached rows to the new destination order, marks rows of new destinations pending
// (so that a WEC given to UpsertWEC right after SetDestinations is evaluated once), and rebuilds
// the groups from the cached rows.
func (cs *colState) realign(t *Table, oldIdx map[string]int) {
	old := cs.rows
	cs.rows = make([]rowState, len(t.dests))
	cs.groups = map[string]*group{}
	cs.errRows = 0
	cs.pending = 0
	for i, name := range t.dests {
		j, ok := oldIdx[name]
		if !ok {
			cs.rows[i].pending = true
			cs.pending++
			continue
		}
		cs.rows[i] = old[j]
		if cs.rows[i].pending {
			cs.pending++
			continue
		}
		if len(cs.rows[i].errs) > 0 {
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
	if len(cs.rows[i].errs) > 0 {
		cs.errRows--
	}
	cs.rows[i] = rowState{}
	cs.evalRow(t, i)
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
	if len(cs.rows[i].errs) > 0 {
		cs.errRows++
	}
}

func (cs *colState) evalRowExprs(t *Table, i int) {
	c, a, r := cs.col, t.rows[i], &cs.rows[i]
	r.kept, r.errs = filterRow(c, a, &cs.budget)
	if !r.kept || c.isSelect() {
		return
	}
	keyOK := true
	if len(c.groupBy) > 0 {
		r.key = take(&cs.keyArena, len(c.groupBy))
	}
	for k, g := range c.groupBy {
		out, err := g.prg.eval(a, &cs.budget)
		if err == nil {
			r.key[k], err = fromAny(out)
		}
		if err != nil {
			r.errs = append(r.errs, rowError{g.name, err.Error()})
			keyOK = false
		}
	}
	if !keyOK {
		r.key = nil
		return
	}
	r.subjects = take(&cs.subjArena, len(c.aggregates))
	subjectsOK := true
	for k, ag := range c.aggregates {
		if ag.prg == nil {
			continue
		}
		out, err := ag.prg.eval(a, &cs.budget)
		if err != nil {
			r.errs = append(r.errs, rowError{ag.name, err.Error()})
			subjectsOK = false
			continue
		}
		r.subjects[k] = classifyAny(out)
	}
	if !subjectsOK {
		// A row with an evaluation error is left out of the aggregation input as a whole (docs/rules.md "Collectors"):
		// COUNT does not count it either.
		r.key, r.subjects = nil, nil
		return
	}
	cs.keyBuf = cs.keyBuf[:0]
	for k := range r.key {
		cs.keyBuf = appendKey(cs.keyBuf, &r.key[k])
	}
	cs.join(i, cs.keyBuf)
}

// take returns n zero elements from the front of an arena, or new ones when it is used up.
func take[T any](arena *[]T, n int) []T {
	if len(*arena) < n {
		return make([]T, n)
	}
	out := (*arena)[:n:n]
	*arena = (*arena)[n:]
	return out
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
	if r.cells != nil {
		return
	}
	c := &selectCells{values: make([]controlv1alpha1.Value, len(cs.col.selects))}
	r.cells = c
	for k, s := range cs.col.selects {
		out, err := s.prg.eval(t.rows[i], &cs.budget)
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
				res.Rows = append(res.Rows, controlv1alpha1.StatusCombinationRow{Columns: r.cells.values})
				res.RowErrors = errorsOf(t.dests[i], r.cells.errs, res.RowErrors)
			}
			if len(r.errs) > 0 {
				seen++
				res.RowErrors = errorsOf(t.dests[i], r.errs, res.RowErrors)
			}
		}
		return res
	}
	for i, seen := 0, 0; i < len(cs.rows) && seen < cs.errRows && len(res.RowErrors) < MaxRowErrors; i++ {
		if r := &cs.rows[i]; len(r.errs) > 0 {
			seen++
			res.RowErrors = errorsOf(t.dests[i], r.errs, res.RowErrors)
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
	return cs.rows[g.rep].key
}

func compareKeys(a, b []jvalue) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareValues(&a[i], &b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

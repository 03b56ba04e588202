package collector

import (
	"iter"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

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
	// Unavailable, when not empty, says why the WEC's status cannot be evaluated (e.g. it is over
	// the size cap): its row is not evaluated; it is dropped with this row error (column "").
	Unavailable string
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
	object     *ObjectBudget   // the object's budget (SetObjectBudget), nil: none
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
			cs = &colState{col: c, budget: timeBudget{limit: c.timeBudget, object: t.object}}
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

// SetObjectBudget bounds the comprehensions the Table evaluates by o too (nil: by the collectors'
// own budgets only), until it is set again.
func (t *Table) SetObjectBudget(o *ObjectBudget) {
	t.object = o
	for _, cs := range t.collectors {
		cs.budget.end()
		cs.budget.object = o
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

// sameInput reports whether two inputs of a WEC are the same: the same name, labels, time and
// status value — the same map, list or compact object (inputs are never modified), or an equal
// scalar. A status decoded again from the same JSON is a different value: the row is evaluated
// again, as for a change.
func sameInput(a, b *WEC) bool {
	if a.Name != b.Name || a.Unavailable != b.Unavailable || !maps.Equal(a.Labels, b.Labels) || !sameValue(a.Status, b.Status) {
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

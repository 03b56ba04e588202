package collector

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/statusfold/statusfold/policy/compactjson"
)

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

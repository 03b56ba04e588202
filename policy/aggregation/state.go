package aggregation

import (
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/objview"
)

// wecMeta is one WEC with what the State caches about it besides its field values.
type wecMeta struct {
	WEC
	current bool // has applied the current WDS generation (and its status observed it, when known)
	extra   bool // has fields the plan does not list
	rank    float64
	rankErr error
	stale   bool           // rank not yet evaluated for this report (Result does, within the object's evaluation)
	input   ast.Value      // full mode: the WEC as an AST value, converted once
	verdict health.Result  // Lua mode: the WEC's verdict (rank is its verdictRank)
	health  map[string]any // modules withHealth: the WEC's verdict as the input document shows it
}

// State is the incremental form of Returned for one workload object: the controller keeps one per
// object, tells it about changes and asks for the result. Per-WEC work (field extraction, the
// `wec_rank` rule) happens once per change of that WEC; Result combines the cached values, which are
// stored field by field (one column per planned field) so that combining scans contiguous memory.
// A State is not safe for concurrent use.
type State struct {
	e   *Engine
	gk  schema.GroupKind
	obj map[string]any
	gen int64

	meta  []wecMeta        // by slot
	cols  [][]fv           // [field][slot]
	slot  map[string]int32 // WEC name → slot
	order []int32          // slots in WEC-name order

	mod       *module
	pl        *plan
	planErr   error
	nExtra    int
	nReported int

	// Per planned field: the last combined value, and whether it must be recomputed. A one-WEC
	// change leaves a count field clean when that WEC's count did not change.
	last    []any
	lastOK  []bool
	dirty   []bool
	allDirt bool

	// The fields no planned combiner lists, under the "generic" default: the last combined value of
	// each (absent: left out), valid for the current WECs except the xDirty fields when xValid.
	xLast  map[string]any
	xDirty map[string]bool
	xValid bool

	ev *evaluation // the object's evaluation while Result (or Returned) runs

	old  []fv        // a WEC's previous values while prepare replaces them
	bulk bool        // load is filling the State: extras go to the xs slabs
	xs   [][]fvExtra // per field, per slot: extras of a bulk load (reused by pooled States)
}

// NewState returns an empty State for an object of kind gk.
func (e *Engine) NewState(gk schema.GroupKind) *State {
	return &State{e: e, gk: gk, slot: map[string]int32{}}
}

// reset empties a State (keeping its buffers) for reuse.
func (s *State) reset() {
	clear(s.meta)
	s.meta, s.order, s.slot = s.meta[:0], s.order[:0], map[string]int32{}
	for i := range s.cols {
		clear(s.cols[i])
		s.cols[i] = s.cols[i][:0]
	}
	for i := range s.xs {
		clear(s.xs[i])
	}
	clear(s.last)
	s.xValid = false
	s.obj, s.mod, s.pl, s.planErr, s.nExtra, s.nReported, s.allDirt = nil, nil, nil, nil, 0, 0, true
}

// SetObject sets the WDS object. Modules see it as policy/objview gives it: without .status,
// metadata.resourceVersion and metadata.managedFields.
func (s *State) SetObject(obj map[string]any) {
	s.obj = objview.Of(obj)
	s.gen = objectGeneration(s.obj)
	s.mod = nil // plan, ranks and currency may depend on the object: recompute on next Result
	s.xValid = false
}

// begin starts the evaluation of the object, unless one is running; the function it returns
// ends it.
func (s *State) begin() (end func()) {
	if s.ev != nil {
		return func() {}
	}
	s.ev = newEvaluation(s.e.lim)
	return func() {
		s.ev.end()
		s.ev = nil
	}
}

// sync makes sure the cached per-WEC values belong to the module now in force.
func (s *State) sync() {
	mod := s.e.moduleFor(s.gk)
	if mod == s.mod {
		return
	}
	s.mod, s.pl, s.planErr, s.nExtra = mod, nil, nil, 0
	s.xValid = false
	if mod.statusQ == nil && mod.script == nil {
		s.pl, s.planErr = mod.planFor(s.ev, s.obj)
	}
	if s.pl == nil && s.planErr == nil && mod.statusQ == nil && mod.script == nil {
		s.planErr = fmt.Errorf("%s: no plan", mod.name)
	}
	if s.pl != nil {
		nf := len(s.pl.fields)
		s.cols = slices.Grow(s.cols[:0], nf)[:nf] // reuse the buffers of a pooled State
		for i := range s.cols {
			s.cols[i] = slices.Grow(s.cols[i][:0], len(s.meta))[:len(s.meta)]
		}
		s.last = slices.Grow(s.last[:0], nf)[:nf]
		s.lastOK = slices.Grow(s.lastOK[:0], nf)[:nf]
		s.dirty = slices.Grow(s.dirty[:0], nf)[:nf]
		clear(s.dirty)
	}
	s.allDirt = true
	for sl := range s.meta {
		s.meta[sl].extra = false
		s.prepare(int32(sl))
	}
}

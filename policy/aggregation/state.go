package aggregation

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/objview"
)

// wecMeta is one WEC with what the State caches about it besides its field values.
type wecMeta struct {
	WEC
	current bool // has applied the current WDS generation (and its status observed it, when known)
	extra   bool // has fields the plan does not list
	rank    float64
	rankErr error
	input   ast.Value // full mode: the WEC as an AST value, converted once
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

	old  []fv        // a WEC's previous values while prepare replaces them
	bulk bool        // load is filling the State: extras go to the xs slabs
	xs   [][]fvExtra // per field, per slot: extras of a bulk load (reused by pooled States)
}

// NewState returns an empty State for an object of kind gk.
func (e *Engine) NewState(gk schema.GroupKind) *State {
	return &State{e: e, gk: gk, slot: map[string]int32{}}
}

// load fills a fresh State with wecs in one go (what Returned does): one allocation per column
// instead of one per WEC, no name map until someone upserts.
func (s *State) load(wecs []WEC) {
	s.sync()
	n := len(wecs)
	s.meta = slices.Grow(s.meta[:0], n)
	s.order = slices.Grow(s.order[:0], n)
	sorted := true
	for i, w := range wecs {
		s.meta = append(s.meta, wecMeta{WEC: w})
		s.order = append(s.order, int32(i))
		if i > 0 && wecs[i-1].Name >= w.Name {
			sorted = false
		}
		if w.Status != nil {
			s.nReported++
		}
	}
	if !sorted {
		sort.SliceStable(s.order, func(a, b int) bool { return s.meta[s.order[a]].Name < s.meta[s.order[b]].Name })
		for k := 1; k < n; k++ {
			if s.meta[s.order[k-1]].Name == s.meta[s.order[k]].Name { // duplicates: the last one wins, as with UpsertWEC
				last := make(map[string]int, n)
				for i, w := range wecs {
					last[w.Name] = i
				}
				dedup := make([]WEC, 0, len(last))
				for i, w := range wecs {
					if last[w.Name] == i {
						dedup = append(dedup, w)
					}
				}
				clear(s.meta)
				s.meta, s.order, s.nReported = s.meta[:0], s.order[:0], 0
				s.load(dedup)
				return
			}
		}
	}
	s.slot = nil
	if s.pl == nil {
		for sl := range s.meta {
			s.prepare(int32(sl))
		}
		return
	}
	if len(s.xs) < len(s.pl.fields) {
		s.xs = make([][]fvExtra, len(s.pl.fields))
	}
	for i := range s.pl.fields {
		s.cols[i] = slices.Grow(s.cols[i][:0], n)[:n]
		if needsExtra(s.pl.fields[i].op) {
			s.xs[i] = slices.Grow(s.xs[i][:0], n)[:n]
		}
	}
	s.bulk = true
	for sl := range s.meta {
		s.prepare(int32(sl))
	}
	s.bulk = false
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

func objectGeneration(obj map[string]any) int64 {
	md, _ := obj["metadata"].(map[string]any)
	return toNum(md["generation"]).i
}

// position returns where name is, or would be, in s.order.
func (s *State) position(name string) int {
	return sort.Search(len(s.order), func(k int) bool { return s.meta[s.order[k]].Name >= name })
}

// slots returns the WEC name → slot map, building it after a bulk load.
func (s *State) slots() map[string]int32 {
	if s.slot == nil {
		s.slot = make(map[string]int32, len(s.meta))
		for i := range s.meta {
			s.slot[s.meta[i].Name] = int32(i)
		}
	}
	return s.slot
}

// UpsertWEC adds a WEC or replaces what it reported.
func (s *State) UpsertWEC(w WEC) {
	sl, ok := s.slots()[w.Name]
	if ok {
		s.forget(sl)
		s.markExtras(s.meta[sl].Status, w.Status)
		s.meta[sl] = wecMeta{WEC: w, current: s.meta[sl].current}
	} else {
		s.allDirt = true
		s.xValid = false
		sl = int32(len(s.meta))
		s.meta = append(s.meta, wecMeta{WEC: w})
		for i := range s.cols {
			s.cols[i] = append(s.cols[i], fv{})
		}
		s.slot[w.Name] = sl
		if n := len(s.order); n == 0 || s.meta[s.order[n-1]].Name < w.Name {
			s.order = append(s.order, sl) // WECs often arrive in name order
		} else {
			k := s.position(w.Name)
			s.order = append(s.order, 0)
			copy(s.order[k+1:], s.order[k:])
			s.order[k] = sl
		}
	}
	if w.Status != nil {
		s.nReported++
	}
	if s.mod != nil {
		s.prepare(sl)
	}
}

// forget undoes a slot's contribution to the State's counters.
func (s *State) forget(sl int32) {
	if s.meta[sl].extra {
		s.nExtra--
	}
	if s.meta[sl].Status != nil {
		s.nReported--
	}
}

// RemoveWEC forgets a WEC.
func (s *State) RemoveWEC(name string) {
	sl, ok := s.slots()[name]
	if !ok {
		return
	}
	s.forget(sl)
	s.allDirt = true
	s.xValid = false
	k := s.position(name)
	s.order = append(s.order[:k], s.order[k+1:]...)
	delete(s.slot, name)
	last := int32(len(s.meta) - 1)
	if sl != last { // move the last slot into the freed one
		s.meta[sl] = s.meta[last]
		for i := range s.cols {
			s.cols[i][sl] = s.cols[i][last]
		}
		s.slot[s.meta[sl].Name] = sl
		s.order[s.position(s.meta[sl].Name)] = sl
	}
	s.meta = s.meta[:last]
	for i := range s.cols {
		s.cols[i] = s.cols[i][:last]
	}
}

// prepare computes what the State caches about one slot under the current module and plan.
func (s *State) prepare(sl int32) {
	w := &s.meta[sl]
	wasCurrent := w.current
	if s.mod.statusQ != nil || s.pl == nil {
		w.current = isCurrent(w.Details, w.Status, s.gen)
		if s.mod.statusQ != nil {
			w.input, w.rankErr = toValue(wecDoc(w.WEC))
		}
		return
	}
	// Currency first, from the details alone; the observedGeneration part below, from the
	// extracted value when the plan has the generation combiner (saves a lookup per WEC).
	d := w.Details
	w.current = w.Status != nil && d != nil && d.LastGeneration >= s.gen && d.LastGenerationIsApplied
	gi := s.pl.genIdx
	hasGen := gi >= 0
	if w.current && d.WECGeneration != nil && !hasGen {
		w.current = observed(toNum(w.Status["observedGeneration"]), *d.WECGeneration)
	}
	if !s.allDirt {
		s.old = slices.Grow(s.old[:0], len(s.pl.fields))[:len(s.pl.fields)]
		for i := range s.pl.fields {
			s.old[i] = s.cols[i][sl]
		}
	}
	planned := 0
	for i := range s.pl.fields {
		fp := &s.pl.fields[i]
		var into *fvExtra
		if s.bulk && needsExtra(fp.op) {
			into = &s.xs[i][sl]
		}
		v, has := extract(fp, w.Status, into)
		if has {
			planned++
		}
		if hasGen && i == gi && w.current && d.WECGeneration != nil {
			w.current = observed(v.n, *d.WECGeneration)
		}
		s.cols[i][sl] = v
	}
	// Dirty marking after currency is final (the generation combiner depends on it).
	if !s.allDirt {
		for i := range s.pl.fields {
			if !s.dirty[i] && !sameValue(s.pl.fields[i].op, &s.old[i], &s.cols[i][sl], wasCurrent != w.current) {
				s.dirty[i] = true
			}
		}
	}
	if s.pl.dflt != opDrop && len(w.Status) > planned {
		w.extra = true
		s.nExtra++
	}
	if s.mod.rankQ != nil {
		w.rank, w.rankErr = s.evalRank(w)
	}
}

func (s *State) evalRank(w *wecMeta) (float64, error) {
	in, err := toValue(map[string]any{"object": s.obj, "wec": wecDoc(w.WEC)})
	if err != nil {
		return 0, err
	}
	v, ok, err := s.mod.eval(s.mod.rankQ, in)
	if err != nil {
		return 0, err
	}
	n := toNum(v)
	if !ok || !n.ok {
		return 0, fmt.Errorf("%s: rule %s for WEC %q is not a number", s.mod.name, ruleWECRank, w.Name)
	}
	return n.f, nil
}

// reusable says whether a combiner's last result can be reused when no WEC's value changed: only
// for scalar results of combiners that read nothing but the field (results that are maps or lists
// are rebuilt, so no two results share them).
func reusable(o op) bool {
	switch o {
	case opCountMin, opCountMax, opSum, opSumClamped, opGeneration, opMin, opMax, opAnd, opOr, opLatest, opEarliest:
		return true
	}
	return false
}

// sameValue says whether a WEC's new value of a field leaves the field's combination unchanged.
// currencyChanged matters to the generation combiner.
func sameValue(o op, a, b *fv, currencyChanged bool) bool {
	switch o {
	case opCountMin, opCountMax, opSum:
		return a.n == b.n
	case opGeneration:
		return a.n.ok == b.n.ok && !currencyChanged
	case opSumClamped:
		return a.n == b.n && a.x.t == b.x.t
	case opMin, opMax:
		return a.n == b.n && scalarEqual(a.raw, b.raw)
	case opAnd, opOr, opLatest, opEarliest:
		return scalarEqual(a.raw, b.raw)
	}
	return false
}

// scalarEqual compares JSON scalars of the same Go type; anything else is "different".
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
}

// wecDoc is a WEC as the Rego input document shows it.
func wecDoc(w WEC) map[string]any {
	d := map[string]any{"name": w.Name, "status": nil}
	if w.Status != nil {
		d["status"] = w.Status
	}
	if w.Details != nil {
		sd := map[string]any{
			"lastGeneration":          w.Details.LastGeneration,
			"lastGenerationIsApplied": w.Details.LastGenerationIsApplied,
		}
		if w.Details.WECGeneration != nil {
			sd["wecGeneration"] = *w.Details.WECGeneration
		}
		d["statusDetails"] = sd
	}
	return d
}

// isCurrent is the currency of one WEC (docs/rules.md "Status return"): the WorkStatus says the WDS generation gen (or a
// later one) reached the WEC and was applied there, and — when the WEC copy's own generation is
// known — the reported status has observed it. A WEC without statusDetails, or that has reported
// nothing, is not known to be current.
func isCurrent(d *controlv1alpha1.StatusDetails, status map[string]any, gen int64) bool {
	if status == nil || d == nil || d.LastGeneration < gen || !d.LastGenerationIsApplied {
		return false
	}
	return d.WECGeneration == nil || observed(toNum(status["observedGeneration"]), *d.WECGeneration)
}

// observed says whether a status's observedGeneration has reached the WEC copy's generation.
func observed(obs num, wecGeneration int64) bool { return obs.ok && obs.i >= wecGeneration }

// sync makes sure the cached per-WEC values belong to the module now in force.
func (s *State) sync() {
	mod := s.e.moduleFor(s.gk)
	if mod == s.mod {
		return
	}
	s.mod, s.pl, s.planErr, s.nExtra = mod, nil, nil, 0
	s.xValid = false
	if mod.statusQ == nil {
		s.pl, s.planErr = mod.planFor(s.obj)
	}
	if s.pl == nil && s.planErr == nil && mod.statusQ == nil {
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

// Result computes the status to write; nil means nothing (no WEC, or none has reported).
func (s *State) Result() (map[string]any, error) {
	s.sync()
	if s.nReported == 0 {
		return nil, nil
	}
	var out map[string]any
	var err error
	switch {
	case len(s.meta) == 1:
		out = copyStatus(&s.meta[0], s.gen)
	case s.mod.statusQ != nil:
		out, err = s.fullResult()
	default:
		out, err = s.combinedResult()
	}
	if err != nil {
		return nil, err
	}
	if n := jsonSize(out, s.e.lim.maxOutputBytes); n > s.e.lim.maxOutputBytes {
		return nil, fmt.Errorf("%s: the status is larger than %d bytes as JSON", s.mod.name, s.e.lim.maxOutputBytes)
	}
	return out, nil
}

// copyStatus is the one-WEC result: a copy, except observedGeneration (docs/rules.md "Status return").
func copyStatus(w *wecMeta, gen int64) map[string]any {
	out := runtime.DeepCopyJSONValue(NormalizeNumbers(w.Status)).(map[string]any)
	if _, has := out["observedGeneration"]; has {
		out["observedGeneration"] = returnedGeneration(gen, w.current)
	}
	return out
}

func (s *State) combinedResult() (map[string]any, error) {
	if s.planErr != nil {
		return nil, s.planErr
	}
	worst := -1
	for j, sl := range s.order {
		w := &s.meta[sl]
		if w.rankErr != nil {
			return nil, w.rankErr
		}
		if worst < 0 || w.rank > s.meta[s.order[worst]].rank {
			worst = j
		}
	}
	out := make(map[string]any, len(s.pl.fields))
	for i := range s.pl.fields {
		fp := &s.pl.fields[i]
		if s.allDirt || s.dirty[i] || !reusable(fp.op) {
			col := column{n: len(s.order), vals: s.cols[i], order: s.order, meta: s.meta}
			s.last[i], s.lastOK[i] = combineField(fp, col, s.gen)
			s.dirty[i] = false
		}
		if s.lastOK[i] {
			out[fp.name] = s.last[i]
		}
	}
	s.allDirt = false
	if s.nExtra > 0 {
		maps := make([]map[string]any, len(s.order))
		for j, sl := range s.order {
			maps[j] = s.meta[sl].Status
		}
		if s.pl.dflt == opGeneric {
			s.cachedExtras(maps, out)
		} else {
			combineExtras(s.pl, maps, out, worst)
		}
	} else {
		s.xValid = false
	}
	if s.mod.finalizeQ == nil {
		return out, nil
	}
	in, err := toValue(map[string]any{
		"object": s.obj,
		"status": out,
		"wecs":   map[string]any{"count": len(s.meta), "reported": s.nReported},
	})
	if err != nil {
		return nil, err
	}
	v, ok, err := s.mod.eval(s.mod.finalizeQ, in)
	if err != nil || !ok {
		return out, err
	}
	return s.asStatus(v, ruleFinalize)
}

// markExtras notes which unplanned fields a WEC's new status changes (old → new), so that
// cachedExtras recombines only those.
func (s *State) markExtras(old, new map[string]any) {
	if !s.xValid || s.pl == nil || s.mod == nil || s.mod.statusQ != nil {
		s.xValid = false
		return
	}
	for k, v := range old {
		if _, planned := s.pl.index[k]; !planned && !reflect.DeepEqual(v, new[k]) {
			s.xDirty[k] = true
		}
	}
	for k := range new {
		if _, planned := s.pl.index[k]; !planned {
			if _, had := old[k]; !had {
				s.xDirty[k] = true
			}
		}
	}
}

// cachedExtras adds the unplanned fields under the generic default to out: all recombined when the
// cache is not valid, else only the fields some WEC changed since the last Result. Cached maps and
// lists are copied into out, so results never share them.
func (s *State) cachedExtras(maps []map[string]any, out map[string]any) {
	if !s.xValid {
		s.xLast = map[string]any{}
		combineExtras(s.pl, maps, s.xLast, -1)
		s.xDirty = map[string]bool{}
		s.xValid = true
	} else {
		for k := range s.xDirty {
			if v, ok := mergeKey(k, maps); ok {
				s.xLast[k] = v
			} else {
				delete(s.xLast, k)
			}
		}
		clear(s.xDirty)
	}
	for k, v := range s.xLast {
		out[k] = copyTree(v)
	}
}

// asStatus checks that a rule's value is an object.
func (s *State) asStatus(v any, rule string) (map[string]any, error) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, fmt.Errorf("%s: rule %s is %T, not an object", s.mod.name, rule, v)
	}
	return m, nil
}

// fullResult runs a module's `status` rule over all WECs, then applies the observedGeneration rule.
func (s *State) fullResult() (map[string]any, error) {
	objV, err := toValue(s.obj)
	if err != nil {
		return nil, err
	}
	arr := make([]*ast.Term, len(s.order))
	allCurrent := true
	for j, sl := range s.order {
		w := &s.meta[sl]
		if w.rankErr != nil {
			return nil, w.rankErr
		}
		arr[j] = ast.NewTerm(w.input)
		allCurrent = allCurrent && w.current
	}
	in := ast.NewObject(
		[2]*ast.Term{ast.StringTerm("object"), ast.NewTerm(objV)},
		[2]*ast.Term{ast.StringTerm("wecs"), ast.ArrayTerm(arr...)},
		[2]*ast.Term{ast.StringTerm("generation"), ast.IntNumberTerm(int(s.gen))},
		[2]*ast.Term{ast.StringTerm("allCurrent"), ast.BooleanTerm(allCurrent)},
	)
	v, ok, err := s.mod.eval(s.mod.statusQ, in)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	m, err := s.asStatus(v, ruleStatus)
	if err != nil {
		return nil, err
	}
	if _, has := m["observedGeneration"]; has {
		m["observedGeneration"] = returnedGeneration(s.gen, allCurrent)
	}
	return m, nil
}

// jsonSize estimates the JSON size of v, stopping early once it exceeds limit.
func jsonSize(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			n += 2
			for k, x := range t {
				n += len(k) + 4
				walk(x)
			}
		case []any:
			n += 2
			for _, x := range t {
				n++
				walk(x)
			}
		case string:
			n += len(t) + 2
		default:
			n += 8
		}
	}
	walk(v)
	return n
}

package aggregation

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// wecEntry is one WEC with what the State caches about it.
type wecEntry struct {
	WEC
	current bool // has applied the current WDS generation (and its status observed it, when known)
	vals    []fv // one per field of the plan
	extra   bool // has fields the plan does not list
	rank    float64
	rankErr error
	input   ast.Value // full mode: the WEC as an AST value, converted once
}

// State is the incremental form of Returned for one workload object: the controller keeps one per
// object, tells it about changes and asks for the result. Per-WEC work (field extraction, the
// `wec_rank` rule) happens once per change of that WEC; Result combines the cached values. A State
// is not safe for concurrent use.
type State struct {
	e    *Engine
	gk   schema.GroupKind
	obj  map[string]any
	gen  int64
	wecs []*wecEntry // sorted by name

	mod     *module
	pl      *plan
	planErr error
	nExtra  int
}

// NewState returns an empty State for an object of kind gk.
func (e *Engine) NewState(gk schema.GroupKind) *State {
	return &State{e: e, gk: gk}
}

// SetObject sets the WDS object (its .status is ignored).
func (s *State) SetObject(obj map[string]any) {
	if obj != nil {
		if _, has := obj["status"]; has {
			c := make(map[string]any, len(obj))
			for k, v := range obj {
				if k != "status" {
					c[k] = v
				}
			}
			obj = c
		}
	}
	s.obj = obj
	s.gen = objectGeneration(obj)
	s.mod = nil // plan, ranks and currency may depend on the object: recompute on next Result
}

func objectGeneration(obj map[string]any) int64 {
	md, _ := obj["metadata"].(map[string]any)
	n := toNum(md["generation"])
	return n.i
}

// UpsertWEC adds a WEC or replaces what it reported.
func (s *State) UpsertWEC(w WEC) {
	i := sort.Search(len(s.wecs), func(i int) bool { return s.wecs[i].Name >= w.Name })
	ent := &wecEntry{WEC: w}
	if i < len(s.wecs) && s.wecs[i].Name == w.Name {
		if s.wecs[i].extra {
			s.nExtra--
		}
		s.wecs[i] = ent
	} else {
		s.wecs = append(s.wecs, nil)
		copy(s.wecs[i+1:], s.wecs[i:])
		s.wecs[i] = ent
	}
	if s.mod != nil {
		s.prepare(ent)
	}
}

// RemoveWEC forgets a WEC.
func (s *State) RemoveWEC(name string) {
	i := sort.Search(len(s.wecs), func(i int) bool { return s.wecs[i].Name >= name })
	if i < len(s.wecs) && s.wecs[i].Name == name {
		if s.wecs[i].extra {
			s.nExtra--
		}
		s.wecs = append(s.wecs[:i], s.wecs[i+1:]...)
	}
}

// prepare computes what the State caches about one WEC under the current module and plan.
func (s *State) prepare(w *wecEntry) {
	w.current = isCurrent(w.Details, w.Status, s.gen)
	if s.mod.statusQ != nil {
		w.input, w.rankErr = toValue(wecDoc(w.WEC))
		return
	}
	if s.pl == nil {
		return
	}
	w.vals = make([]fv, len(s.pl.fields))
	for i := range s.pl.fields {
		w.vals[i] = extract(&s.pl.fields[i], w.Status)
	}
	w.extra = false
	if s.pl.dflt != opDrop {
		for k := range w.Status {
			if _, ok := s.pl.index[k]; !ok {
				w.extra = true
				s.nExtra++
				break
			}
		}
	}
	if s.mod.rankQ != nil {
		w.rank, w.rankErr = s.evalRank(w)
	}
}

func (s *State) evalRank(w *wecEntry) (float64, error) {
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

// isCurrent is SPEC §5's currency of one WEC: the WorkStatus says the WDS generation gen (or a
// later one) reached the WEC and was applied there, and — when the WEC copy's own generation is
// known — the reported status has observed it. A WEC without statusDetails, or that has reported
// nothing, is not known to be current.
func isCurrent(d *controlv1alpha1.StatusDetails, status map[string]any, gen int64) bool {
	if status == nil || d == nil || d.LastGeneration < gen || !d.LastGenerationIsApplied {
		return false
	}
	if d.WECGeneration != nil {
		obs := toNum(status["observedGeneration"])
		if !obs.ok || obs.i < *d.WECGeneration {
			return false
		}
	}
	return true
}

// sync makes sure the cached per-WEC values belong to the module now in force.
func (s *State) sync() {
	mod := s.e.moduleFor(s.gk)
	if mod == s.mod {
		return
	}
	s.mod, s.pl, s.planErr, s.nExtra = mod, nil, nil, 0
	if mod.statusQ == nil {
		s.pl, s.planErr = mod.planFor(s.obj)
	}
	for _, w := range s.wecs {
		s.prepare(w)
	}
}

// Result computes the status to write; nil means nothing (no WEC, or none has reported).
func (s *State) Result() (map[string]any, error) {
	s.sync()
	reported := 0
	for _, w := range s.wecs {
		if w.Status != nil {
			reported++
		}
	}
	if reported == 0 {
		return nil, nil
	}
	var out map[string]any
	var err error
	switch {
	case len(s.wecs) == 1:
		out = copyStatus(s.wecs[0], s.gen)
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

// copyStatus is the one-WEC result: a copy, except observedGeneration (SPEC §5).
func copyStatus(w *wecEntry, gen int64) map[string]any {
	out := runtime.DeepCopyJSONValue(jsonCompatible(w.Status)).(map[string]any)
	if _, has := out["observedGeneration"]; has {
		out["observedGeneration"] = returnedGeneration(gen, w.current)
	}
	return out
}

func (s *State) combinedResult() (map[string]any, error) {
	if s.planErr != nil {
		return nil, s.planErr
	}
	for _, w := range s.wecs {
		if w.rankErr != nil {
			return nil, w.rankErr
		}
	}
	wec := func(j int) *wecEntry { return s.wecs[j] }
	out := make(map[string]any, len(s.pl.fields))
	for i := range s.pl.fields {
		fp := &s.pl.fields[i]
		col := column{n: len(s.wecs), at: func(j int) *fv { return &s.wecs[j].vals[i] }, wec: wec}
		if v, ok := combineField(fp, col, s.gen); ok {
			out[fp.name] = v
		}
	}
	if s.nExtra > 0 {
		maps := make([]map[string]any, len(s.wecs))
		for j, w := range s.wecs {
			maps[j] = w.Status
		}
		worst := -1
		for j, w := range s.wecs {
			if worst < 0 || w.rank > s.wecs[worst].rank {
				worst = j
			}
		}
		combineExtras(s.pl, maps, out, worst)
	}
	if s.mod.finalizeQ == nil {
		return out, nil
	}
	reported := 0
	for _, w := range s.wecs {
		if w.Status != nil {
			reported++
		}
	}
	in, err := toValue(map[string]any{
		"object": s.obj,
		"status": out,
		"wecs":   map[string]any{"count": len(s.wecs), "reported": reported},
	})
	if err != nil {
		return nil, err
	}
	v, ok, err := s.mod.eval(s.mod.finalizeQ, in)
	if err != nil {
		return nil, err
	}
	if !ok {
		return out, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, fmt.Errorf("%s: rule %s is %T, not an object", s.mod.name, ruleFinalize, v)
	}
	return m, nil
}

// fullResult runs a module's `status` rule over all WECs, then applies the observedGeneration rule.
func (s *State) fullResult() (map[string]any, error) {
	objV, err := toValue(s.obj)
	if err != nil {
		return nil, err
	}
	arr := make([]*ast.Term, len(s.wecs))
	allCurrent := true
	for j, w := range s.wecs {
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
	m, isMap := v.(map[string]any)
	if !isMap {
		return nil, fmt.Errorf("%s: rule %s is %T, not an object", s.mod.name, ruleStatus, v)
	}
	if _, has := m["observedGeneration"]; has {
		m["observedGeneration"] = returnedGeneration(s.gen, allCurrent)
	}
	return m, nil
}

// jsonCompatible converts a status that may hold json.Number or int into DeepCopyJSONValue's types.
func jsonCompatible(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = jsonCompatible(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonCompatible(x)
		}
		return out
	case int:
		return int64(t)
	case int32:
		return int64(t)
	case json.Number:
		return normalize(t)
	}
	return v
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

package aggregation

import (
	"fmt"
	"reflect"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statusfold/statusfold/policy/applykey"
	"github.com/statusfold/statusfold/policy/objview"
)

// Result computes the status to write; nil means nothing (no WEC, or none has reported).
// Every Rego query it runs shares one deadline (WithTimeout), one budget and one evaluation slot.
func (s *State) Result() (map[string]any, error) {
	defer s.begin()()
	s.sync()
	if s.nReported == 0 {
		return nil, nil
	}
	var out map[string]any
	var err error
	switch {
	case len(s.meta) == 1:
		out = copyStatus(&s.meta[0], s.gen)
	case s.mod.script != nil:
		out = s.luaResult()
	case s.mod.statusQ != nil:
		out, err = s.fullResult()
	default:
		out, err = s.combinedResult()
	}
	if err != nil {
		return nil, err
	}
	n, longestKey := jsonSize(out, s.e.lim.maxOutputBytes)
	if n > s.e.lim.maxOutputBytes {
		return nil, fmt.Errorf("%s: the status is larger than %d bytes as JSON", s.mod.name, s.e.lim.maxOutputBytes)
	}
	// The apiserver would refuse the apply of a longer key on every attempt (docs/rules.md
	// "Reported status size"); only a status with a long enough key is walked again.
	if longestKey >= applykey.MinBytes {
		if path, n := applykey.Find(out); n > 0 {
			return nil, fmt.Errorf("%s: the status holds at %s %s", s.mod.name, path, applykey.TooLong(n))
		}
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

// combinedResult is the aggregate under the module's `combine` plan: the planned fields, the
// fields the plan does not list, then the optional `finalize` rule.
func (s *State) combinedResult() (map[string]any, error) {
	if s.planErr != nil {
		return nil, s.planErr
	}
	worst, err := s.worstWEC()
	if err != nil {
		return nil, err
	}
	out := s.combinePlanned()
	s.combineUnplanned(out, worst)
	if s.mod.finalizeQ == nil {
		return out, nil
	}
	return s.finalize(out)
}

// worstWEC returns the position in s.order of the WEC with the highest wec_rank (the first on
// ties), or the first WEC's `wec_rank` error. It evaluates the ranks not yet known; one that fails
// is evaluated again by the next Result.
func (s *State) worstWEC() (int, error) {
	worst := -1
	for j, sl := range s.order {
		w := &s.meta[sl]
		if w.stale {
			if w.rank, w.rankErr = s.evalRank(w); w.rankErr != nil {
				return -1, w.rankErr
			}
			w.stale = false
		}
		if w.rankErr != nil {
			return -1, w.rankErr
		}
		if worst < 0 || w.rank > s.meta[s.order[worst]].rank {
			worst = j
		}
	}
	return worst, nil
}

// combinePlanned combines the planned fields, recomputing only the dirty ones (and those whose
// result cannot be reused).
func (s *State) combinePlanned() map[string]any {
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
	return out
}

// combineUnplanned adds to out the fields the plan does not list, by its default combiner; worst
// is the position of the worst-ranked WEC.
func (s *State) combineUnplanned(out map[string]any, worst int) {
	if s.nExtra == 0 {
		s.xValid = false
		return
	}
	maps := make([]map[string]any, len(s.order))
	for j, sl := range s.order {
		maps[j] = s.meta[sl].Status
	}
	if s.pl.dflt == opGeneric {
		s.cachedExtras(maps, out)
	} else {
		combineExtras(s.pl, maps, out, worst)
	}
}

// finalize applies the module's `finalize` rule to the combined status out; when the rule is
// undefined, out stands.
func (s *State) finalize(out map[string]any) (map[string]any, error) {
	in, err := toValue(map[string]any{
		"object": s.obj,
		"status": out,
		"wecs":   map[string]any{"count": len(s.meta), "reported": s.nReported},
	})
	if err != nil {
		return nil, err
	}
	v, ok, err := s.mod.eval(s.ev, s.mod.finalizeQ, in)
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
		out[k] = objview.CopyTree(v)
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
	v, ok, err := s.mod.eval(s.ev, s.mod.statusQ, in)
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

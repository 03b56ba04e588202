package aggregation

import (
	"fmt"
	"slices"
)

// prepare computes what the State caches about one slot under the current module and plan.
func (s *State) prepare(sl int32) {
	w := &s.meta[sl]
	wasCurrent := w.current
	if s.mod.statusQ != nil || s.pl == nil {
		w.current = isCurrent(w.Details, w.Status, s.gen)
		w.stale = s.mod.script != nil
		if s.mod.statusQ != nil {
			if s.mod.withHealth {
				w.health = s.healthDoc(w) // currency known now
			}
			w.input, w.rankErr = toValue(wecDoc(w.WEC, w.health))
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
	w.stale = s.mod.rankQ != nil
	if s.mod.withHealth {
		w.health = s.healthDoc(w) // currency known now
	}
}

// evalRank evaluates the module's `wec_rank` rule for w: a number, or an error.
func (s *State) evalRank(w *wecMeta) (float64, error) {
	in, err := toValue(map[string]any{"object": s.obj, "wec": wecDoc(w.WEC, w.health)})
	if err != nil {
		return 0, err
	}
	v, ok, err := s.mod.eval(s.ev, s.mod.rankQ, in)
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

// wecDoc is a WEC as the Rego input document shows it; h (nil: left out) is its verdict.
func wecDoc(w WEC, h map[string]any) map[string]any {
	d := map[string]any{"name": w.Name, "status": nil}
	if h != nil {
		d["health"] = h
	}
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

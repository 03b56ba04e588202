package aggregation

// combineObject combines nested maps (one per WEC, nil when absent) by p.
func combineObject(p *plan, maps []map[string]any, gen int64) map[string]any {
	out := map[string]any{}
	vals := make([]fv, len(maps))
	order := make([]int32, len(maps))
	for j := range order {
		order[j] = int32(j)
	}
	for i := range p.fields {
		fp := &p.fields[i]
		for j, m := range maps {
			vals[j], _ = extract(fp, m, nil)
		}
		col := column{n: len(maps), vals: vals, order: order}
		if v, ok := combineField(fp, col, gen); ok {
			out[fp.name] = v
		}
	}
	combineExtras(p, maps, out, -1)
	return out
}

// combineExtras applies the default combiner to the fields p does not list. worst is the index
// of the worst-ranked WEC (for "from_worst"), or -1.
func combineExtras(p *plan, maps []map[string]any, out map[string]any, worst int) {
	switch {
	case p.dflt == opDrop:
		return
	case p.dflt == opFromWorst:
		if worst < 0 {
			return
		}
		for k, v := range maps[worst] {
			if _, planned := p.index[k]; !planned && v != nil {
				out[k] = v
			}
		}
		return
	}
	var keys []string
	seen := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			if _, planned := p.index[k]; !planned && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		if v, ok := mergeKey(k, maps); ok {
			out[k] = v
		}
	}
}

// mergeKey applies the generic rules to field k of maps (the WECs that report it).
func mergeKey(k string, maps []map[string]any) (any, bool) {
	vals := make([]any, 0, len(maps))
	for _, m := range maps {
		if v, ok := m[k]; ok && v != nil {
			vals = append(vals, v)
		}
	}
	return mergeGeneric(k, vals, len(maps))
}

// mergeGeneric applies the generic rules (docs/aggregation.md "Generic rules") to the values of
// one field from the WECs that report it (n WECs in all): numbers → minimum; booleans → false if
// any false; strings → kept only when all agree; `conditions` → by type with three-valued logic;
// objects → field by field; lists → element by element when all have the same length; anything
// else → left out.
func mergeGeneric(key string, vals []any, n int) (any, bool) {
	if len(vals) == 0 {
		return nil, false
	}
	if key == "conditions" {
		if out, ok := mergeConditionLists(vals, n); ok {
			return out, true
		}
	}
	switch first := vals[0].(type) {
	case bool:
		return mergeBools(first, vals[1:])
	case string:
		return mergeStrings(first, vals[1:])
	case map[string]any:
		return mergeObjects(vals)
	case []any:
		return mergeLists(first, vals)
	}
	return mergeNumbers(vals)
}

// mergeConditionLists combines a `conditions` field under the generic rules (genericCondPlan);
// ok is false when some value is not a list of typed conditions: the field then merges by the
// other generic rules.
func mergeConditionLists(vals []any, n int) ([]any, bool) {
	lists := make([][]cond, n)
	for j, v := range vals {
		var ok bool
		if lists[j], ok = parseConds(v, nil); !ok {
			return nil, false
		}
	}
	return combineConditions(lists, genericCondPlan), true
}

// mergeBools is false if any value is false; left out when some value is not a boolean.
func mergeBools(first bool, rest []any) (any, bool) {
	res := first
	for _, v := range rest {
		b, ok := v.(bool)
		if !ok {
			return nil, false
		}
		res = res && b
	}
	return res, true
}

// mergeStrings keeps the string when every value is that same string.
func mergeStrings(first string, rest []any) (any, bool) {
	for _, v := range rest {
		if s, ok := v.(string); !ok || s != first {
			return nil, false
		}
	}
	return first, true
}

// mergeObjects merges objects field by field (the union of their fields, each by the generic
// rules over the objects that have it); left out when some value is not an object.
func mergeObjects(vals []any) (any, bool) {
	maps := make([]map[string]any, len(vals))
	for j, v := range vals {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		maps[j] = m
	}
	out := map[string]any{}
	combineExtras(&plan{index: map[string]int{}}, maps, out, -1)
	return out, true
}

// mergeLists merges lists element by element when every value is a list of first's length; left
// out otherwise, or when some element is left out.
func mergeLists(first []any, vals []any) (any, bool) {
	out := make([]any, len(first))
	for _, v := range vals {
		l, ok := v.([]any)
		if !ok || len(l) != len(first) {
			return nil, false
		}
	}
	for i := range first {
		elems := make([]any, len(vals))
		for j, v := range vals {
			elems[j] = v.([]any)[i]
		}
		e, ok := mergeGeneric("", elems, len(vals))
		if !ok {
			return nil, false
		}
		out[i] = e
	}
	return out, true
}

// mergeNumbers is the smallest number, as reported (the first on ties); left out when some value
// is not a number.
func mergeNumbers(vals []any) (any, bool) {
	best := toNum(vals[0])
	if !best.ok {
		return nil, false
	}
	raw := vals[0]
	for _, v := range vals[1:] {
		x := toNum(v)
		if !x.ok {
			return nil, false
		}
		if x.f < best.f {
			best, raw = x, v
		}
	}
	return raw, true
}

package aggregation

// combineField applies fp's combiner to col. ok is false when the field is left out. Each
// combiner is one function below; docs/aggregation.md ("combine") describes what each computes.
func combineField(fp *fieldPlan, col column, gen int64) (any, bool) {
	switch fp.op {
	case opDrop:
		return nil, false
	case opGeneric:
		return combineGeneric(fp, col)
	case opMin, opMax:
		return combineMinMax(col, fp.op == opMin)
	case opCountMin, opCountMax:
		return combineCount(col, fp.op == opCountMin)
	case opSum, opSumClamped:
		return combineSum(col, fp.op == opSumClamped)
	case opAnd, opOr:
		return combineBool(col, fp.op == opAnd)
	case opAgree:
		return combineAgree(col)
	case opLatest:
		return combineLatest(col)
	case opEarliest:
		return combineEarliest(col)
	case opUnionIfAll:
		return unionIfAll(col)
	case opWorst:
		return combineWorst(fp, col)
	case opFromWorst:
		return combineFromWorst(col)
	case opRevision:
		return combineRevision(fp, col)
	case opGeneration:
		return combineGeneration(col, gen)
	case opConditions:
		return combineConditionsField(fp, col)
	case opNested:
		return combineNested(fp, col, gen)
	}
	return nil, false
}

// combineGeneric is the generic combiner: mergeGeneric over the WECs that report the field.
func combineGeneric(fp *fieldPlan, col column) (any, bool) {
	vals := make([]any, 0, col.n)
	for j := 0; j < col.n; j++ {
		if v := col.at(j); v.present() {
			vals = append(vals, v.raw)
		}
	}
	return mergeGeneric(fp.name, vals, col.n)
}

// combineMinMax is the min combiner (smallest) or the max combiner: the smallest or largest
// number among the WECs that report one, as reported; the first such WEC wins ties.
func combineMinMax(col column, smallest bool) (any, bool) {
	var best num
	var raw any
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		if !v.n.ok {
			continue
		}
		if !best.ok || (smallest && v.n.f < best.f) || (!smallest && v.n.f > best.f) {
			best, raw = v.n, v.raw
		}
	}
	return raw, best.ok
}

// combineCount is the count_min combiner (smallest) or the count_max combiner: the smallest or
// largest count, present when some WEC reports the field.
func combineCount(col column, smallest bool) (any, bool) {
	reported := false
	var best int64
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		x := v.n.i // a missing or non-integer count reads as 0, as Argo CD's typed structs do
		if v.n.ok {
			reported = true
		}
		if j == 0 || (smallest && x < best) || (!smallest && x > best) {
			best = x
		}
	}
	return best, reported
}

// combineSum is the sum combiner, or with clamped the sum_clamped combiner: each WEC's count at
// most that WEC's own target.
func combineSum(col column, clamped bool) (any, bool) {
	reported := false
	var sum int64
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		if !v.n.ok {
			continue
		}
		reported = true
		x := v.n.i
		if clamped {
			x = min(x, v.x.t.i)
		}
		sum += x
	}
	return sum, reported
}

// combineBool is the and combiner (and) or the or combiner over the WECs that report a boolean.
func combineBool(col column, and bool) (any, bool) {
	seen, res := false, and
	for j := 0; j < col.n; j++ {
		b, ok := col.at(j).raw.(bool)
		if !ok {
			continue
		}
		seen = true
		if and {
			res = res && b
		} else {
			res = res || b
		}
	}
	return res, seen
}

// combineAgree is the agree combiner: the value when every WEC reports the same one.
func combineAgree(col column) (any, bool) {
	var first any
	seen := false
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		if !v.present() {
			return nil, false
		}
		if !seen {
			first, seen = v.raw, true
		} else if !jsonEqual(first, v.raw) {
			return nil, false
		}
	}
	return first, seen
}

// combineLatest is the latest combiner: the largest string.
func combineLatest(col column) (any, bool) {
	best := ""
	for j := 0; j < col.n; j++ {
		if s, ok := col.at(j).raw.(string); ok && s > best {
			best = s
		}
	}
	return best, best != ""
}

// combineEarliest is the earliest combiner: the smallest non-empty string.
func combineEarliest(col column) (any, bool) {
	best := ""
	for j := 0; j < col.n; j++ {
		if s, ok := col.at(j).raw.(string); ok && s != "" && (best == "" || s < best) {
			best = s
		}
	}
	return best, best != ""
}

// unionIfAll is the union_if_all combiner: every WEC's list entries, JSON-equal ones once, in
// first-seen order; left out unless every WEC has a non-empty list. Entries are deduplicated by
// their canonical JSON text (appendJSONKey) in a hash set: linear in the total size of the lists.
func unionIfAll(col column) (any, bool) {
	total := 0
	for j := 0; j < col.n; j++ {
		list, _ := col.at(j).raw.([]any)
		if len(list) == 0 {
			return nil, false
		}
		total += len(list)
	}
	if col.n == 0 {
		return nil, false
	}
	out := make([]any, 0, total)
	seen := make(map[string]struct{}, total)
	var buf []byte
	for j := 0; j < col.n; j++ {
		for _, x := range col.at(j).raw.([]any) {
			buf = appendJSONKey(buf[:0], x)
			if _, dup := seen[string(buf)]; !dup {
				seen[string(buf)] = struct{}{}
				out = append(out, x)
			}
		}
	}
	return out, true
}

// combineWorst is the worst combiner: the value ranked worst by fp.order, values not listed (and
// missing ones) ranking worst of all. The first WEC wins ties; a missing worst value leaves the
// field out.
func combineWorst(fp *fieldPlan, col column) (any, bool) {
	worst, rank := any(nil), -1
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		r := len(fp.order)
		if s, ok := v.raw.(string); ok {
			if i, listed := fp.order[s]; listed {
				r = i
			}
		}
		if r > rank {
			worst, rank = v.raw, r
		}
	}
	return worst, worst != nil
}

// combineFromWorst is the from_worst combiner: the value of the WEC with the highest wec_rank
// (the first such WEC on ties). Inside nested objects, where there is no rank, it leaves the
// field out.
func combineFromWorst(col column) (any, bool) {
	if !col.hasWECs() {
		return nil, false
	}
	best := -1
	for j := 0; j < col.n; j++ {
		if best < 0 || col.wec(j).rank > col.wec(best).rank {
			best = j
		}
	}
	v := col.at(best)
	return v.raw, v.present()
}

// combineRevision is the revision combiner, declared on both fields of a pair: this field of the
// pair of the first WEC whose current and update revisions differ, else of the first WEC that
// reports a current revision.
func combineRevision(fp *fieldPlan, col column) (any, bool) {
	chosen := -1
	for j := 0; j < col.n; j++ {
		v := col.at(j).x
		if v.s1 != v.s2 {
			chosen = j
			break
		}
		if chosen < 0 && v.s1 != "" {
			chosen = j
		}
	}
	if chosen < 0 {
		return nil, false
	}
	v := col.at(chosen).x
	if fp.name == fp.cur {
		return v.s1, v.s1 != ""
	}
	return v.s2, v.s2 != ""
}

// combineGeneration is the generation combiner: when some WEC reports the field, the WDS
// generation mapped by returnedGeneration.
func combineGeneration(col column, gen int64) (any, bool) {
	present, allCurrent := false, true
	for j := 0; j < col.n; j++ {
		if col.at(j).n.ok {
			present = true
		}
		if col.hasWECs() && !col.wec(j).current {
			allCurrent = false
		}
	}
	if !present {
		return nil, false
	}
	return returnedGeneration(gen, allCurrent), true
}

// combineConditionsField is the conditions combiner: combineConditions under fp's polarity and
// presence rules, left out when no WEC reports a list or some WEC's value is not a list of typed
// conditions.
func combineConditionsField(fp *fieldPlan, col column) (any, bool) {
	lists := make([][]cond, col.n)
	anyList := false
	for j := 0; j < col.n; j++ {
		v := col.at(j)
		if v.present() && !v.x.condsOK {
			return nil, false // not a list of typed conditions: shapes differ
		}
		lists[j] = v.x.conds
		anyList = anyList || v.present()
	}
	if !anyList {
		return nil, false
	}
	return combineConditions(lists, fp.cond), true
}

// combineNested combines an object field whose own fields have combiners (combineObject over the
// WECs' maps), left out when no WEC reports an object.
func combineNested(fp *fieldPlan, col column, gen int64) (any, bool) {
	maps := make([]map[string]any, col.n)
	anyMap := false
	for j := 0; j < col.n; j++ {
		if m, ok := col.at(j).raw.(map[string]any); ok {
			maps[j], anyMap = m, true
		}
	}
	if !anyMap {
		return nil, false
	}
	return combineObject(fp.nested, maps, gen), true
}

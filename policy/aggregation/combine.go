package aggregation

import (
	"encoding/json"
	"math"
	"reflect"
)

// num is a parsed JSON number.
type num struct {
	ok    bool
	isInt bool
	i     int64
	f     float64
}

func toNum(v any) num {
	switch t := v.(type) {
	case int64:
		return num{ok: true, isInt: true, i: t, f: float64(t)}
	case int:
		return num{ok: true, isInt: true, i: int64(t), f: float64(t)}
	case int32:
		return num{ok: true, isInt: true, i: int64(t), f: float64(t)}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return num{ok: true, isInt: true, i: int64(t), f: t}
		}
		return num{ok: true, f: t}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return num{ok: true, isInt: true, i: i, f: float64(i)}
		}
		if f, err := t.Float64(); err == nil {
			return num{ok: true, f: f}
		}
	}
	return num{}
}

func (n num) value() any {
	if n.isInt {
		return n.i
	}
	return n.f
}

// cond is one parsed condition entry.
type cond struct {
	typ, status, ltt string
	m                map[string]any
}

func parseConds(v any) ([]cond, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]cond, 0, len(list))
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		t, ok := m["type"].(string)
		if !ok {
			return nil, false
		}
		s, _ := m["status"].(string)
		l, _ := m["lastTransitionTime"].(string)
		out = append(out, cond{typ: t, status: s, ltt: l, m: m})
	}
	return out, true
}

// fv is one WEC's cached value of one planned field.
type fv struct {
	present bool
	raw     any
	n       num    // numeric combiners: the value; revision: unused
	t       num    // sum_clamped: the WEC's own target
	s1, s2  string // revision: current and update
	conds   []cond // conditions
	condsOK bool
}

func extract(fp *fieldPlan, m map[string]any) fv {
	raw, present := m[fp.name]
	if raw == nil {
		present = false
	}
	v := fv{present: present, raw: raw}
	switch fp.op {
	case opMin, opMax, opCountMin, opCountMax, opSum, opGeneration:
		v.n = toNum(raw)
	case opSumClamped:
		v.n = toNum(raw)
		v.t = toNum(m[fp.target])
	case opRevision:
		v.s1, _ = m[fp.cur].(string)
		v.s2, _ = m[fp.upd].(string)
	case opConditions:
		v.conds, v.condsOK = parseConds(raw)
	}
	return v
}

// column gives the values of one field across the WECs, in WEC-name order.
type column struct {
	n      int
	at     func(j int) *fv
	wec    func(j int) *wecEntry
	parent int // number of WECs the values come from (for conditions: missing lists count)
}

// combineField applies fp's combiner to col. ok is false when the field is left out.
func combineField(fp *fieldPlan, col column, gen int64) (any, bool) {
	switch fp.op {
	case opDrop:
		return nil, false
	case opGeneric:
		vals := make([]any, 0, col.n)
		for j := 0; j < col.n; j++ {
			if v := col.at(j); v.present {
				vals = append(vals, v.raw)
			}
		}
		return mergeGeneric(fp.name, vals, col.n)
	case opMin, opMax:
		var best num
		var raw any
		for j := 0; j < col.n; j++ {
			v := col.at(j)
			if !v.n.ok {
				continue
			}
			if !best.ok || (fp.op == opMin && v.n.f < best.f) || (fp.op == opMax && v.n.f > best.f) {
				best, raw = v.n, v.raw
			}
		}
		return raw, best.ok
	case opCountMin, opCountMax:
		any := false
		var best int64
		for j := 0; j < col.n; j++ {
			v := col.at(j)
			x := v.n.i // a missing or non-integer count reads as 0, as Argo CD's typed structs do
			if v.n.ok {
				any = true
			}
			if j == 0 || (fp.op == opCountMin && x < best) || (fp.op == opCountMax && x > best) {
				best = x
			}
		}
		return best, any
	case opSum, opSumClamped:
		any := false
		var sum int64
		for j := 0; j < col.n; j++ {
			v := col.at(j)
			if !v.n.ok {
				continue
			}
			any = true
			x := v.n.i
			if fp.op == opSumClamped {
				x = min(x, v.t.i)
			}
			sum += x
		}
		return sum, any
	case opAnd, opOr:
		seen, res := false, fp.op == opAnd
		for j := 0; j < col.n; j++ {
			b, ok := col.at(j).raw.(bool)
			if !ok {
				continue
			}
			seen = true
			if fp.op == opAnd {
				res = res && b
			} else {
				res = res || b
			}
		}
		return res, seen
	case opAgree:
		var first any
		seen := false
		for j := 0; j < col.n; j++ {
			v := col.at(j)
			if !v.present {
				return nil, false
			}
			if !seen {
				first, seen = v.raw, true
			} else if !jsonEqual(first, v.raw) {
				return nil, false
			}
		}
		return first, seen
	case opLatest:
		best := ""
		for j := 0; j < col.n; j++ {
			if s, ok := col.at(j).raw.(string); ok && s > best {
				best = s
			}
		}
		return best, best != ""
	case opUnionIfAll:
		var out []any
		for j := 0; j < col.n; j++ {
			list, _ := col.at(j).raw.([]any)
			if len(list) == 0 {
				return nil, false
			}
			for _, x := range list {
				if !containsJSON(out, x) {
					out = append(out, x)
				}
			}
		}
		return out, out != nil
	case opWorst:
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
	case opFromWorst:
		if col.wec == nil {
			return nil, false
		}
		best := -1
		for j := 0; j < col.n; j++ {
			if best < 0 || col.wec(j).rank > col.wec(best).rank {
				best = j
			}
		}
		v := col.at(best)
		return v.raw, v.present
	case opRevision:
		chosen := -1
		for j := 0; j < col.n; j++ {
			v := col.at(j)
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
		v := col.at(chosen)
		if fp.name == fp.cur {
			return v.s1, v.s1 != ""
		}
		return v.s2, v.s2 != ""
	case opGeneration:
		present, allCurrent := false, true
		for j := 0; j < col.n; j++ {
			if col.at(j).n.ok {
				present = true
			}
			if col.wec != nil && !col.wec(j).current {
				allCurrent = false
			}
		}
		if !present {
			return nil, false
		}
		return returnedGeneration(gen, allCurrent), true
	case opConditions:
		lists := make([][]cond, col.n)
		anyList := false
		for j := 0; j < col.n; j++ {
			v := col.at(j)
			if v.present && !v.condsOK {
				return nil, false // not a list of typed conditions: shapes differ
			}
			lists[j] = v.conds
			anyList = anyList || v.present
		}
		if !anyList {
			return nil, false
		}
		return combineConditions(lists, fp.cond), true
	case opNested:
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
		return combineObject(fp.nested, maps, nil, gen), true
	}
	return nil, false
}

// combineObject combines maps (one per WEC, nil when absent) by p. wec gives per-WEC context
// (generation currency, rank) or is nil inside nested objects.
func combineObject(p *plan, maps []map[string]any, wec func(j int) *wecEntry, gen int64) map[string]any {
	out := map[string]any{}
	vals := make([]fv, len(maps))
	for i := range p.fields {
		fp := &p.fields[i]
		for j, m := range maps {
			vals[j] = extract(fp, m)
		}
		col := column{n: len(maps), at: func(j int) *fv { return &vals[j] }, wec: wec}
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
		vals := make([]any, 0, len(maps))
		for _, m := range maps {
			if v, ok := m[k]; ok && v != nil {
				vals = append(vals, v)
			}
		}
		if v, ok := mergeGeneric(k, vals, len(maps)); ok {
			out[k] = v
		}
	}
}

// mergeGeneric applies the seed documents' generic rules to the values of one field from the WECs
// that report it (n WECs in all): numbers → minimum; booleans → false if any false; strings → kept
// only when all agree; `conditions` → by type with three-valued logic; objects → field by field;
// lists → element by element when all have the same length; anything else → left out.
func mergeGeneric(key string, vals []any, n int) (any, bool) {
	if len(vals) == 0 {
		return nil, false
	}
	if key == "conditions" {
		lists := make([][]cond, n)
		ok := true
		for j, v := range vals {
			if lists[j], ok = parseConds(v); !ok {
				break
			}
		}
		if ok {
			return combineConditions(lists, genericCondPlan), true
		}
	}
	switch first := vals[0].(type) {
	case bool:
		res := first
		for _, v := range vals[1:] {
			b, ok := v.(bool)
			if !ok {
				return nil, false
			}
			res = res && b
		}
		return res, true
	case string:
		for _, v := range vals[1:] {
			if s, ok := v.(string); !ok || s != first {
				return nil, false
			}
		}
		return first, true
	case map[string]any:
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
	case []any:
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

// combineConditions groups the WECs' condition lists by type (in order of first appearance).
// lists[j] is nil for a WEC without conditions. Per type:
//   - presence "all": an entry only if every WEC has one; "any": if some WEC has one (missing
//     entries do not vote);
//   - negative polarity: any True → True, all False → False, else Unknown; a missing entry is False;
//   - otherwise: any False → False, all True → True, else Unknown; a missing entry is Unknown.
//
// The entry is a copy of the newest entry (by lastTransitionTime, first WEC on ties) whose status
// agrees with the combined one, with the latest lastTransitionTime of all entries; when none agrees,
// reason "Incomplete" says that some WEC did not report the type.
func combineConditions(lists [][]cond, cp *condPlan) []any {
	type group struct {
		typ     string
		entries []*cond
	}
	var groups []*group
	find := func(t string) *group {
		for _, g := range groups {
			if g.typ == t {
				return g
			}
		}
		g := &group{typ: t, entries: make([]*cond, len(lists))}
		groups = append(groups, g)
		return g
	}
	for j, l := range lists {
		for i := range l {
			g := find(l[i].typ)
			if g.entries[j] == nil {
				g.entries[j] = &l[i]
			}
		}
	}
	out := make([]any, 0, len(groups))
	for _, g := range groups {
		presence := cp.presence[g.typ]
		neg := cp.negative[g.typ]
		nTrue, nFalse, nOther, nMissing := 0, 0, 0, 0
		latest := ""
		for _, c := range g.entries {
			if c == nil {
				nMissing++
				continue
			}
			switch c.status {
			case "True":
				nTrue++
			case "False":
				nFalse++
			default:
				nOther++
			}
			latest = max(latest, c.ltt)
		}
		if presence == "all" && nMissing > 0 {
			continue
		}
		if presence == "" {
			if neg {
				nFalse += nMissing
			} else {
				nOther += nMissing
			}
		}
		var status string
		switch {
		case neg && nTrue > 0:
			status = "True"
		case neg && nOther == 0:
			status = "False"
		case !neg && nFalse > 0:
			status = "False"
		case !neg && nOther == 0 && nTrue > 0:
			status = "True"
		default:
			status = "Unknown"
		}
		var chosen *cond
		for _, c := range g.entries {
			if c != nil && c.status == status && (chosen == nil || c.ltt > chosen.ltt) {
				chosen = c
			}
		}
		entry := map[string]any{}
		if chosen != nil {
			for k, v := range chosen.m {
				entry[k] = v
			}
		} else {
			entry["type"] = g.typ
			entry["reason"] = "Incomplete"
			entry["message"] = "not every WEC reports this condition"
		}
		entry["status"] = status
		if latest != "" {
			entry["lastTransitionTime"] = latest
		}
		out = append(out, entry)
	}
	return out
}

func jsonEqual(a, b any) bool {
	if na, nb := toNum(a), toNum(b); na.ok && nb.ok {
		return na.f == nb.f
	}
	return reflect.DeepEqual(a, b)
}

func containsJSON(list []any, x any) bool {
	for _, y := range list {
		if jsonEqual(x, y) {
			return true
		}
	}
	return false
}

// returnedGeneration is the observedGeneration written into the WDS object: its generation when
// every contributing WEC is current, otherwise one less (never negative).
func returnedGeneration(gen int64, allCurrent bool) int64 {
	if allCurrent {
		return gen
	}
	return max(gen-1, 0)
}

package aggregation

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"
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

// cond is one parsed condition entry. t orders lastTransitionTime values (see timeKey).
type cond struct {
	typ, status, ltt string
	t                int64
	m                map[string]any
}

// timeKey maps an RFC 3339 time to an int64 that orders like the time, at second resolution:
// the UTC digits YYYYMMDDhhmmss. Kubernetes writes "2006-01-02T15:04:05Z", read without
// allocation; other offsets go through time.Parse; anything else is 0 (oldest).
func timeKey(s string) int64 {
	if len(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == 'Z' {
		var k int64
		for i := 0; i < 19; i++ {
			c := s[i]
			if c >= '0' && c <= '9' {
				k = k*10 + int64(c-'0')
			} else if i != 4 && i != 7 && i != 10 && i != 13 && i != 16 {
				return 0
			}
		}
		return k
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	u := t.UTC()
	return int64(u.Year())*1e10 + int64(u.Month())*1e8 + int64(u.Day())*1e6 + int64(u.Hour())*1e4 + int64(u.Minute())*100 + int64(u.Second())
}

// parseConds parses a conditions list into out (which it may grow).
func parseConds(v any, out []cond) ([]cond, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
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
		out = append(out, cond{typ: t, status: s, ltt: l, t: timeKey(l), m: m})
	}
	return out, true
}

// fv is one WEC's cached value of one planned field. It is kept small: a State holds one per WEC
// and field.
type fv struct {
	raw any      // the value as reported; nil when absent
	n   num      // numeric combiners: the value
	x   *fvExtra // sum_clamped, revision and conditions only
}

// fvExtra holds what only some combiners need.
type fvExtra struct {
	t       num    // sum_clamped: the WEC's own target
	s1, s2  string // revision: current and update
	conds   []cond // conditions
	condsOK bool
	buf     [2]cond
}

func (v *fv) present() bool { return v.raw != nil }

// extract reads fp's field from one WEC's status. Count combiners keep only the number (fewer
// pointers for the garbage collector to follow); the others keep the value as reported. has says
// whether the status has the key at all. x, when not nil, is where the extra part goes (a slab
// entry), else it is allocated.
func extract(fp *fieldPlan, m map[string]any, x *fvExtra) (v fv, has bool) {
	raw, has := m[fp.name]
	switch fp.op {
	case opCountMin, opCountMax, opSum, opGeneration:
		v.n = toNum(raw)
		return v, has
	}
	v.raw = raw
	switch fp.op {
	case opMin, opMax:
		v.n = toNum(raw)
	case opSumClamped, opRevision, opConditions:
		if x == nil {
			x = &fvExtra{}
		} else {
			*x = fvExtra{}
		}
		v.x = x
	}
	switch fp.op {
	case opSumClamped:
		v.n = toNum(raw)
		x.t = toNum(m[fp.target])
	case opRevision:
		x.s1, _ = m[fp.cur].(string)
		x.s2, _ = m[fp.upd].(string)
	case opConditions:
		x.conds, x.condsOK = parseConds(raw, x.buf[:0])
	}
	return v, has
}

// needsExtra says whether a combiner keeps an fvExtra per WEC.
func needsExtra(o op) bool { return o == opSumClamped || o == opRevision || o == opConditions }

// column gives the values of one field across the WECs, in WEC-name order: row j is
// vals[order[j]]. meta (by the same index as vals) gives per-WEC context — currency, rank — and is
// nil inside nested objects.
type column struct {
	n     int
	vals  []fv
	order []int32
	meta  []wecMeta
}

func (c column) at(j int) *fv       { return &c.vals[c.order[j]] }
func (c column) wec(j int) *wecMeta { return &c.meta[c.order[j]] }
func (c column) hasWECs() bool      { return c.meta != nil }

// combineField applies fp's combiner to col. ok is false when the field is left out.
func combineField(fp *fieldPlan, col column, gen int64) (any, bool) {
	switch fp.op {
	case opDrop:
		return nil, false
	case opGeneric:
		vals := make([]any, 0, col.n)
		for j := 0; j < col.n; j++ {
			if v := col.at(j); v.present() {
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
				x = min(x, v.x.t.i)
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
	case opLatest:
		best := ""
		for j := 0; j < col.n; j++ {
			if s, ok := col.at(j).raw.(string); ok && s > best {
				best = s
			}
		}
		return best, best != ""
	case opEarliest:
		best := ""
		for j := 0; j < col.n; j++ {
			if s, ok := col.at(j).raw.(string); ok && s != "" && (best == "" || s < best) {
				best = s
			}
		}
		return best, best != ""
	case opUnionIfAll:
		return unionIfAll(col)
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
	case opRevision:
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
	case opGeneration:
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
	case opConditions:
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
		return combineObject(fp.nested, maps, gen), true
	}
	return nil, false
}

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

// copyTree copies the maps and lists of a JSON value (leaves are shared), so that two results never
// share a map or list.
func copyTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = copyTree(x)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = copyTree(x)
		}
		return c
	}
	return v
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
			if lists[j], ok = parseConds(v, nil); !ok {
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
// reason "Incomplete" says that some WEC did not report the type. One pass, no per-WEC memory.
func combineConditions(lists [][]cond, cp *condPlan) []any {
	const (
		sTrue = iota
		sFalse
		sOther
	)
	type group struct {
		typ     string
		lastJ   int
		present int
		count   [3]int
		best    [3]*cond
		latest  *cond
	}
	var groups []*group
	var byType map[string]*group // once there are many types: a linear search would be quadratic
	const linearGroups = 8
	for j, l := range lists {
		for i := range l {
			c := &l[i]
			var g *group
			if byType != nil {
				g = byType[c.typ]
			} else {
				for _, x := range groups {
					if x.typ == c.typ {
						g = x
						break
					}
				}
			}
			if g == nil {
				g = &group{typ: c.typ, lastJ: -1}
				groups = append(groups, g)
				if byType != nil {
					byType[c.typ] = g
				} else if len(groups) > linearGroups {
					byType = make(map[string]*group, 2*len(groups))
					for _, x := range groups {
						byType[x.typ] = x
					}
				}
			}
			if g.lastJ == j {
				continue // a second entry of one type in one WEC: the first counts
			}
			g.lastJ = j
			g.present++
			k := sOther
			switch c.status {
			case "True":
				k = sTrue
			case "False":
				k = sFalse
			}
			g.count[k]++
			if g.best[k] == nil || c.t > g.best[k].t {
				g.best[k] = c
			}
			if g.latest == nil || c.t > g.latest.t {
				g.latest = c
			}
		}
	}
	out := make([]any, 0, len(groups))
	for _, g := range groups {
		presence := cp.presence[g.typ]
		neg := cp.negative[g.typ]
		missing := len(lists) - g.present
		if presence == "all" && missing > 0 {
			continue
		}
		nTrue, nFalse, nOther := g.count[sTrue], g.count[sFalse], g.count[sOther]
		if presence == "" {
			if neg {
				nFalse += missing
			} else {
				nOther += missing
			}
		}
		status, k := "Unknown", sOther
		switch {
		case neg && nTrue > 0:
			status, k = "True", sTrue
		case neg && nOther == 0:
			status, k = "False", sFalse
		case !neg && nFalse > 0:
			status, k = "False", sFalse
		case !neg && nOther == 0 && nTrue > 0:
			status, k = "True", sTrue
		}
		entry := map[string]any{}
		if chosen := g.best[k]; chosen != nil && chosen.status == status || (k == sOther && chosen != nil) {
			for key, v := range chosen.m {
				entry[key] = v
			}
		} else {
			entry["type"] = g.typ
			entry["reason"] = "Incomplete"
			entry["message"] = "not every WEC reports this condition"
		}
		entry["status"] = status
		if g.latest.ltt != "" {
			entry["lastTransitionTime"] = g.latest.ltt
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

// unionIfAll is the union_if_all combiner: every WEC's list entries, JSON-equal ones once, in
// first-seen order; left out unless every WEC has a non-empty list. Entries are deduplicated by
// their canonical JSON text (jsonKey) in a hash set: linear in the total size of the lists.
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

// appendJSONKey appends to b a canonical text of a JSON value: equal for JSON-equal values (object
// keys sorted, numbers by value, so int64(1) and float64(1) agree), different otherwise.
func appendJSONKey(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case string:
		return strconv.AppendQuote(b, t)
	case []any:
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONKey(b, x)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendJSONKey(b, t[k])
		}
		return append(b, '}')
	}
	if n := toNum(v); n.ok {
		if n.isInt {
			return strconv.AppendInt(b, n.i, 10)
		}
		return strconv.AppendFloat(b, n.f, 'g', -1, 64)
	}
	return fmt.Appendf(b, "<%T %v>", v, v)
}

// returnedGeneration is the observedGeneration written into the WDS object: its generation when
// every contributing WEC is current, otherwise one less (never negative).
func returnedGeneration(gen int64, allCurrent bool) int64 {
	if allCurrent {
		return gen
	}
	return max(gen-1, 0)
}

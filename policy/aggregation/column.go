package aggregation

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

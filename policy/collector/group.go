package collector

import (
	"fmt"
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// subjectState is what a row's aggregation subject evaluated to.
type subjectState uint8

const (
	subjectNull   subjectState = iota // null (or no subject, for COUNT): skipped, as SQL skips NULL
	subjectNumber                     // a number, used
	subjectBad                        // a value that is not a number: skipped, in aggregationErrors
)

type subject struct {
	state subjectState
	n     number
	bad   string // for subjectBad: what the value was
}

// classifyAny reads an expression's value (a CEL value or a plain Go value) as a subject.
func classifyAny(v any) subject {
	switch x := v.(type) {
	case nil:
		return subject{state: subjectNull}
	case int64:
		return subject{state: subjectNumber, n: intNum(x)}
	case float64:
		return subject{state: subjectNumber, n: floatNum(x)}
	case string:
		return classifySubject(types.String(x))
	}
	return classifySubject(toRef(v))
}

// classifySubject reads a subject value: int, uint, double, or a string that parses as a number.
func classifySubject(v ref.Val) subject {
	switch x := v.(type) {
	case types.Null:
		return subject{state: subjectNull}
	case types.Int:
		return subject{state: subjectNumber, n: intNum(int64(x))}
	case types.Uint:
		return subject{state: subjectNumber, n: uintNum(uint64(x))}
	case types.Double:
		return subject{state: subjectNumber, n: floatNum(float64(x))}
	case types.String:
		if n, ok := parseNumericString(string(x)); ok {
			return subject{state: subjectNumber, n: n}
		}
		return subject{state: subjectBad, bad: fmt.Sprintf("string value %s is not a number", quoteShort(string(x)))}
	case *types.Optional:
		if !x.HasValue() {
			return subject{state: subjectNull}
		}
		return classifySubject(x.GetValue())
	case types.Bool:
		return subject{state: subjectBad, bad: fmt.Sprintf("bool value %t is not a number", bool(x))}
	}
	return subject{state: subjectBad, bad: fmt.Sprintf("%s value is not a number", v.Type().TypeName())}
}

// quoteShort quotes a value for a message, shortened to 64 bytes.
func quoteShort(s string) string {
	const limit = 64
	if len(s) > limit {
		return fmt.Sprintf("%q…", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}

// group is one output row of an aggregation: the rows that share a group key. Membership is held
// by the rows (rowState.group), so a scan over the rows finds the members.
type group struct {
	keyStr string
	rep    int // the member with the smallest WEC name (index), whose key values the row shows
	count  int
	aggs   []aggState
}

type aggState struct {
	sum  exactSum
	used int // values used (SUM, AVG)
	bad  int // values skipped as not numbers
}

func newGroup(key string, naggs int) *group {
	return &group{keyStr: key, rep: -1, aggs: make([]aggState, naggs)}
}

// add and remove keep COUNT, SUM and AVG up to date; MIN, MAX and the first aggregation error
// are found by a scan of the rows when results are read.
func (g *group) add(cs *colState, i int) {
	g.count++
	if g.rep < 0 || i < g.rep {
		g.rep = i
	}
	g.apply(cs, i, 1)
	cs.rows[i].group = g
}

func (g *group) remove(cs *colState, i int) {
	g.count--
	g.apply(cs, i, -1)
	cs.rows[i].group = nil
	if g.rep == i {
		g.rep = -1
		for m := i + 1; m < len(cs.rows) && g.count > 0; m++ {
			if cs.rows[m].group == g {
				g.rep = m
				break
			}
		}
	}
}

func (g *group) apply(cs *colState, i, sign int) {
	subjects := cs.subjects(i)
	for k, ag := range cs.col.aggregates {
		if ag.slot < 0 {
			continue
		}
		a, s := &g.aggs[k], &subjects[ag.slot]
		switch s.state {
		case subjectNumber:
			a.used += sign
			a.sum.add(s.n, sign)
		case subjectBad:
			a.bad += sign
		}
	}
}

// value is the aggregate k of the group.
func (g *group) value(cs *colState, k int, typ controlv1alpha1.AggregatorType) controlv1alpha1.Value {
	a := &g.aggs[k]
	switch typ {
	case controlv1alpha1.AggregatorTypeCount:
		return numberValue(intNum(int64(g.count)))
	case controlv1alpha1.AggregatorTypeSum:
		return numberValue(a.sum.result())
	case controlv1alpha1.AggregatorTypeAvg:
		return numberValue(a.sum.average(a.used))
	}
	// MIN and MAX return the chosen value as it was; among equal values, the first WEC's by name
	// (rows are scanned in WEC-name order).
	sign := 1
	best := floatNum(math.Inf(1))
	if typ == controlv1alpha1.AggregatorTypeMax {
		sign = -1
		best = floatNum(math.Inf(-1))
	}
	found := false
	for m := g.rep; m >= 0 && m < len(cs.rows); m++ {
		if cs.rows[m].group != g {
			continue
		}
		s := &cs.subjects(m)[cs.col.aggregates[k].slot]
		if s.state == subjectNumber && (!found || sign*compareNumbers(s.n, best) < 0) {
			best, found = s.n, true
		}
	}
	return numberValue(best)
}

// firstBad describes the first (by WEC name) value that aggregate k skipped as not a number.
func (g *group) firstBad(cs *colState, k int) string {
	slot := cs.col.aggregates[k].slot
	if slot < 0 {
		return ""
	}
	for m := g.rep; m >= 0 && m < len(cs.rows); m++ {
		if r := &cs.rows[m]; r.group == g && cs.subjects(m)[slot].state == subjectBad {
			return cs.subjects(m)[slot].bad
		}
	}
	return ""
}

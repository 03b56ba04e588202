package aggregation

import (
	"fmt"
	"sort"
)

// op is one combiner: how a status field's values across WECs become one value.
type op int

// The combiners. docs/aggregation.md describes each one.
const (
	opGeneric    op = iota // the generic rules of docs/aggregation.md, recursively
	opDrop                 // leave the field out
	opMin                  // smallest number among the WECs that report one
	opMax                  // largest number among the WECs that report one
	opCountMin             // smallest count, a missing count being 0 (as Argo CD reads it)
	opCountMax             // largest count, a missing count being 0
	opSum                  // sum of counts, missing = 0
	opSumClamped           // sum over WECs of min(count, that WEC's own target)
	opAnd                  // booleans: false if any false
	opOr                   // booleans: true if any true
	opAgree                // kept only when every WEC reports the same value
	opLatest               // largest string (RFC 3339 timestamps)
	opEarliest             // smallest non-empty string (RFC 3339 timestamps)
	opUnionIfAll           // lists: union when every WEC has a non-empty list, else omitted
	opWorst                // categorical: the value ranked worst by `order` (unlisted or missing = worst)
	opFromWorst            // the value of the WEC with the highest wec_rank
	opRevision             // StatefulSet-style revision pair
	opGeneration           // observedGeneration mapped to the WDS generation
	opConditions           // conditions grouped by type with polarity
	opNested               // an object whose own fields have combiners
)

var opNames = map[string]op{
	"generic": opGeneric, "drop": opDrop, "min": opMin, "max": opMax, "count_min": opCountMin,
	"count_max": opCountMax, "sum": opSum, "sum_clamped": opSumClamped, "and": opAnd, "or": opOr,
	"agree": opAgree, "latest": opLatest, "earliest": opEarliest, "union_if_all": opUnionIfAll, "worst": opWorst,
	"from_worst": opFromWorst, "revision": opRevision, "generation": opGeneration, "conditions": opConditions,
}

// fieldPlan says how one field combines.
type fieldPlan struct {
	name   string
	op     op
	target string         // sum_clamped: the field holding each WEC's own target
	order  map[string]int // worst: rank of each listed value (higher is worse)
	cur    string         // revision: the "current" field
	upd    string         // revision: the "update" field
	cond   *condPlan
	nested *plan
}

// condPlan says how conditions combine.
type condPlan struct {
	negative map[string]bool   // types where True is bad: any True → True, missing = False
	presence map[string]string // types read by presence: "all" (entry only if every WEC has one) or "any"
}

// plan is the parsed `combine` rule: the combiners of an object's fields, in name order, and the
// combiner of every field not listed (key "*", default "generic").
type plan struct {
	fields []fieldPlan
	index  map[string]int
	dflt   op
	genIdx int // index of a top-level observedGeneration field with the generation combiner, or -1
}

// planError is a malformed `combine` value.
type planError struct{ msg string }

func (e *planError) Error() string { return "combine" + e.msg }

func parsePlan(v any) (*plan, error) {
	p, err := parsePlanAt(v, "")
	if err != nil {
		return nil, err
	}
	if _, ok := p.index["observedGeneration"]; !ok {
		// The docs/rules.md "Status return" rule applies unless a module says otherwise.
		p.fields = append(p.fields, fieldPlan{name: "observedGeneration", op: opGeneration})
		p.index["observedGeneration"] = len(p.fields) - 1
	}
	if i := p.index["observedGeneration"]; p.fields[i].op == opGeneration {
		p.genIdx = i
	}
	return p, nil
}

func parsePlanAt(v any, path string) (*plan, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &planError{fmt.Sprintf("%s: must be an object of field name to combiner, not %T", path, v)}
	}
	p := &plan{index: map[string]int{}, dflt: opGeneric, genIdx: -1}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		fpath := fmt.Sprintf("%s[%q]", path, name)
		if name == "*" {
			s, _ := m[name].(string)
			switch s {
			case "generic":
				p.dflt = opGeneric
			case "drop":
				p.dflt = opDrop
			case "from_worst":
				p.dflt = opFromWorst
			default:
				return nil, &planError{fmt.Sprintf("%s: must be \"generic\", \"drop\" or \"from_worst\"", fpath)}
			}
			continue
		}
		fp, err := parseField(name, m[name], fpath)
		if err != nil {
			return nil, err
		}
		p.index[name] = len(p.fields)
		p.fields = append(p.fields, fp)
	}
	return p, nil
}

func parseField(name string, v any, path string) (fieldPlan, error) {
	fp := fieldPlan{name: name}
	var spec map[string]any
	switch t := v.(type) {
	case string:
		spec = map[string]any{"op": t}
	case map[string]any:
		if _, ok := t["op"]; !ok {
			nested, err := parsePlanAt(t, path)
			if err != nil {
				return fp, err
			}
			fp.op, fp.nested = opNested, nested
			return fp, nil
		}
		spec = t
	default:
		return fp, &planError{fmt.Sprintf("%s: must be a combiner name or object, not %T", path, v)}
	}
	opName, _ := spec["op"].(string)
	o, ok := opNames[opName]
	if !ok {
		return fp, &planError{fmt.Sprintf("%s: unknown combiner %q", path, opName)}
	}
	fp.op = o
	str := func(key string) (string, error) {
		s, ok := spec[key].(string)
		if !ok || s == "" {
			return "", &planError{fmt.Sprintf("%s: combiner %q needs a string %q", path, opName, key)}
		}
		return s, nil
	}
	var err error
	switch o {
	case opSumClamped:
		fp.target, err = str("target")
	case opRevision:
		if fp.cur, err = str("current"); err == nil {
			fp.upd, err = str("update")
		}
	case opWorst:
		list, ok := spec["order"].([]any)
		if !ok {
			return fp, &planError{fmt.Sprintf("%s: combiner \"worst\" needs a list \"order\" (best first)", path)}
		}
		fp.order = map[string]int{}
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return fp, &planError{fmt.Sprintf("%s.order[%d]: must be a string", path, i)}
			}
			fp.order[s] = i
		}
	case opConditions:
		fp.cond = &condPlan{negative: map[string]bool{}, presence: map[string]string{}}
		if neg, ok := spec["negative"].([]any); ok {
			for _, x := range neg {
				if s, ok := x.(string); ok {
					fp.cond.negative[s] = true
				}
			}
		}
		if pres, ok := spec["presence"].(map[string]any); ok {
			for k, x := range pres {
				s, _ := x.(string)
				if s != "all" && s != "any" {
					return fp, &planError{fmt.Sprintf("%s.presence[%q]: must be \"all\" or \"any\"", path, k)}
				}
				fp.cond.presence[k] = s
			}
		}
	}
	return fp, err
}

// genericNegative are the condition types the generic rules treat as negative polarity.
var genericNegative = map[string]bool{
	"Failed": true, "ReplicaFailure": true, "Degraded": true, "Stalled": true, "FailureTarget": true,
	"DiskPressure": true, "MemoryPressure": true, "PIDPressure": true, "NetworkUnavailable": true,
}

var genericCondPlan = &condPlan{negative: genericNegative, presence: map[string]string{}}

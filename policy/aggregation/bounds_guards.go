package aggregation

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// guards are the checks of the builtins whose work or result can grow beyond their input. A
// builtin not listed here is charged for its result only.
var guards = map[string]guard{
	"plus": {pre: numberOperands}, "minus": {pre: numberOperands}, "mul": {pre: numberOperands},
	"div": {pre: numberOperands}, "rem": {pre: numberOperands}, "abs": {pre: numberOperands},
	"round": {pre: numberOperands}, "ceil": {pre: numberOperands}, "floor": {pre: numberOperands},
	"format_int": {pre: numberOperands}, "sum": {pre: numberElements}, "product": {pre: numberElements},
	"numbers.range": {pre: rangeSize}, "numbers.range_step": {pre: rangeSize},
	"equal": {pre: comparedNodes}, "neq": {pre: comparedNodes}, "lt": {pre: comparedNodes},
	"lte": {pre: comparedNodes}, "gt": {pre: comparedNodes}, "gte": {pre: comparedNodes},
	"concat":            {pre: concatSize},
	"sprintf":           {pre: sprintfSize},
	"replace":           {pre: replaceSize},
	"split":             {pre: splitSize},
	"regex.split":       {pre: regexSize},
	"regex.find_n":      {pre: regexSize},
	"json.marshal":      {pre: marshalSize(1)},
	"yaml.marshal":      {pre: marshalSize(2)},
	"json.unmarshal":    {pre: unmarshalSize},
	"object.union":      {pre: operandsSize},
	"object.union_n":    {pre: operandsSize},
	"walk":              {pre: operandsSize, post: walkPathSize},
	"sort":              {pre: operandsSize},
	"strings.replace_n": {pre: replaceNSize},
}

// checkNumber refuses a number with too many characters or too large an exponent.
func checkNumber(n ast.Number) error {
	s := string(n)
	if len(s) > maxNumberChars {
		return fmt.Errorf("a number of %d characters is longer than the sandbox's %d", len(s), maxNumberChars)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		var e big.Int
		if _, ok := e.SetString(strings.TrimPrefix(s[i+1:], "+"), 10); ok && e.CmpAbs(big.NewInt(maxNumberExponent)) > 0 {
			return fmt.Errorf("the number %s has an exponent beyond ±%d", s, maxNumberExponent)
		}
	}
	return nil
}

func numberOperands(ops []*ast.Term, _ int64) (int64, error) {
	var n int64
	for _, op := range ops {
		if x, ok := op.Value.(ast.Number); ok {
			if err := checkNumber(x); err != nil {
				return 0, err
			}
			n += int64(len(x))
		}
	}
	return n, nil
}

func numberElements(ops []*ast.Term, _ int64) (int64, error) {
	var n int64
	var err error
	each(ops[0].Value, func(t *ast.Term) {
		if x, ok := t.Value.(ast.Number); ok && err == nil {
			err = checkNumber(x)
			n += int64(len(x))
		}
	})
	return n, err
}

// each calls f for each element of a list or set.
func each(v ast.Value, f func(*ast.Term)) {
	switch c := v.(type) {
	case *ast.Array:
		c.Foreach(f)
	case ast.Set:
		c.Foreach(f)
	}
}

func rangeSize(ops []*ast.Term, _ int64) (int64, error) {
	var ends [3]int64
	for i := range ops {
		x, ok := ops[i].Value.(ast.Number)
		if !ok {
			return 0, nil // OPA reports the type error
		}
		if err := checkNumber(x); err != nil {
			return 0, err
		}
		v, ok := x.Int64()
		if !ok {
			return 0, nil
		}
		ends[i] = v
	}
	span := ends[1] - ends[0]
	if span < 0 {
		span = -span
	}
	if len(ops) > 2 && ends[2] > 0 {
		span /= ends[2]
	}
	if span >= maxRangeSpan {
		return 0, fmt.Errorf("a range of %d numbers is more than the sandbox's %d", capped(span+1), maxRangeSpan)
	}
	return (span + 1) * termBytes, nil
}

func comparedNodes(ops []*ast.Term, _ int64) (int64, error) {
	for _, op := range ops {
		if !scalar(op.Value) && valueSize(op.Value, maxCompareBytes) > maxCompareBytes {
			return 0, fmt.Errorf("a value of more than %d bytes is compared", maxCompareBytes)
		}
	}
	return 0, nil
}

// operandsSize charges the size of the operands: for builtins whose work and result are in
// proportion to them (merging, sorting, walking), when they are built from shared subterms.
func operandsSize(ops []*ast.Term, left int64) (int64, error) {
	var n int64
	for _, op := range ops {
		if !scalar(op.Value) {
			n += valueSize(op.Value, left-n)
		}
	}
	return n, nil
}

func strOf(t *ast.Term) string {
	s, _ := t.Value.(ast.String)
	return string(s)
}

func concatSize(ops []*ast.Term, _ int64) (int64, error) {
	sep := int64(len(strOf(ops[0])))
	var n int64
	each(ops[1].Value, func(t *ast.Term) { n += int64(len(strOf(t))) + sep })
	return n, nil
}

func replaceSize(ops []*ast.Term, _ int64) (int64, error) {
	s, old, repl := strOf(ops[0]), strOf(ops[1]), strOf(ops[2])
	grow := int64(len(repl) - len(old))
	if grow <= 0 {
		return int64(len(s)), nil
	}
	return int64(len(s)) + int64(strings.Count(s, old))*grow, nil
}

func replaceNSize(ops []*ast.Term, _ int64) (int64, error) {
	s := strOf(ops[1])
	var longest int64
	if obj, ok := ops[0].Value.(ast.Object); ok {
		obj.Foreach(func(_, v *ast.Term) { longest = max(longest, int64(len(strOf(v)))) })
	}
	return int64(len(s)) + (int64(len(s))+1)*longest, nil
}

func splitSize(ops []*ast.Term, _ int64) (int64, error) {
	s := strOf(ops[0])
	return int64(len(s)) + int64(strings.Count(s, strOf(ops[1]))+1)*termBytes, nil
}

func regexSize(ops []*ast.Term, _ int64) (int64, error) {
	s := int64(len(strOf(ops[1])))
	parts := s + 1
	if len(ops) > 2 {
		if n, ok := ops[2].Value.(ast.Number); ok {
			if k, ok := n.Int64(); ok && k >= 0 && k < parts {
				parts = k
			}
		}
	}
	return s + parts*termBytes, nil
}

func marshalSize(factor int64) func([]*ast.Term, int64) (int64, error) {
	return func(ops []*ast.Term, left int64) (int64, error) {
		return factor * valueSize(ops[0].Value, left/factor+1), nil
	}
}

func unmarshalSize(ops []*ast.Term, _ int64) (int64, error) {
	return int64(len(strOf(ops[0]))) * 16, nil
}

// sprintfSize is at most what sprintf builds: the format, every width and precision it names (a
// `*` takes one from the arguments, up to Go's limit of 10^6), and every argument in full.
func sprintfSize(ops []*ast.Term, left int64) (int64, error) {
	f := strOf(ops[0])
	n := int64(len(f))
	for i := 0; i < len(f); i++ {
		if f[i] == '*' {
			n += 1_000_000
			continue
		}
		if f[i] < '0' || f[i] > '9' {
			continue
		}
		var w int64
		for ; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
			w = min(w*10+int64(f[i]-'0'), 1_000_000)
		}
		n += w
	}
	each(ops[1].Value, func(t *ast.Term) { n += valueSize(t.Value, left-n) })
	return capped(n), nil
}

package aggregation

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
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

func jsonEqual(a, b any) bool {
	if na, nb := toNum(a), toNum(b); na.ok && nb.ok {
		return na.f == nb.f
	}
	return reflect.DeepEqual(a, b)
}

// scalarEqual compares JSON scalars of the same Go type; anything else is "different".
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
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

// jsonSize estimates the JSON size of v, stopping early once it exceeds limit, and returns with it
// the length in bytes of v's longest object key (so that the apply-key check of Result walks v
// again only when a key could be too long).
func jsonSize(v any, limit int) (n, longestKey int) {
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			n += 2
			for k, x := range t {
				n += len(k) + 4
				longestKey = max(longestKey, len(k))
				walk(x)
			}
		case []any:
			n += 2
			for _, x := range t {
				n++
				walk(x)
			}
		case string:
			n += len(t) + 2
		default:
			n += 8
		}
	}
	walk(v)
	return n, longestKey
}

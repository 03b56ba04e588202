package collector

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/statusfold/statusfold/policy/applykey"
)

// jkind is the kind of a JSON value, in the cross-type order of docs/rules.md "Collectors":
// null < bool < number < string < list < map.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jList
	jMap
)

// jvalue is a JSON value as the engine holds it between CEL and the CombinedStatus: CEL values
// are converted once (docs/rules.md "Collectors" value rules), then compared, grouped and printed in this form.
// A Table holds one per row and group-by column, so what only lists and maps need is behind c
// (56 bytes in all).
type jvalue struct {
	kind jkind
	b    bool
	n    number
	s    string
	c    *jcomposite // jList, jMap: never nil
}

// jcomposite is a list's or a map's contents.
type jcomposite struct {
	keys []string // a map's, sorted
	vals []jvalue // a list's elements; a map's values (vals[i] belongs to keys[i])
}

var errNonFiniteInside = errors.New("a NaN or infinite number inside a list or map cannot be written as JSON")

// fromAny converts an expression's value: a CEL value or a plain Go value (see expression.eval).
func fromAny(v any) (jvalue, error) {
	if r, ok := v.(ref.Val); ok {
		return fromCEL(r, false)
	}
	return fromNative(v, false)
}

// fromCEL converts a CEL result. nested says whether the value sits inside a list or map, where
// NaN and infinities cannot be represented.
func fromCEL(v ref.Val, nested bool) (jvalue, error) {
	switch x := v.(type) {
	case types.Null:
		return jvalue{kind: jNull}, nil
	case types.Bool:
		return jvalue{kind: jBool, b: bool(x)}, nil
	case types.Int:
		return jvalue{kind: jNumber, n: intNum(int64(x))}, nil
	case types.Uint:
		return jvalue{kind: jNumber, n: uintNum(uint64(x))}, nil
	case types.Double:
		return doubleValue(float64(x), nested)
	case types.String:
		return jvalue{kind: jString, s: string(x)}, nil
	case types.Bytes:
		return jvalue{kind: jString, s: base64.StdEncoding.EncodeToString(x)}, nil
	case types.Timestamp:
		return jvalue{kind: jString, s: x.UTC().Format(time.RFC3339Nano)}, nil
	case types.Duration:
		return jvalue{kind: jString, s: x.Duration.String()}, nil
	case *types.Optional:
		if !x.HasValue() {
			return jvalue{kind: jNull}, nil
		}
		return fromCEL(x.GetValue(), nested)
	case *types.Err:
		return jvalue{}, x
	case *types.Unknown:
		return jvalue{}, fmt.Errorf("unknown value %v", x)
	case *types.Type:
		return jvalue{kind: jString, s: x.TypeName()}, nil
	}
	// Values that wrap decoded JSON (obj, returned.status and their parts) convert natively.
	switch nv := v.Value().(type) {
	case map[string]any, []any:
		return fromNative(nv, nested)
	}
	switch x := v.(type) {
	case traits.Lister:
		return listFromCEL(x)
	case traits.Mapper:
		return mapFromCEL(x)
	}
	if s, ok := v.Value().(fmt.Stringer); ok { // quantity, URL, IP, CIDR, semver, …
		return jvalue{kind: jString, s: s.String()}, nil
	}
	return jvalue{kind: jString, s: fmt.Sprint(v.Value())}, nil
}

func listFromCEL(l traits.Lister) (jvalue, error) {
	out := jvalue{kind: jList, c: &jcomposite{}}
	for it := l.Iterator(); it.HasNext() == types.True; {
		e, err := fromCEL(it.Next(), true)
		if err != nil {
			return jvalue{}, err
		}
		out.c.vals = append(out.c.vals, e)
	}
	return out, nil
}

func mapFromCEL(m traits.Mapper) (jvalue, error) {
	out := jvalue{kind: jMap, c: &jcomposite{}}
	type entry struct {
		k string
		v jvalue
	}
	var entries []entry
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return jvalue{}, fmt.Errorf("a map key of type %s cannot be a JSON object key", k.Type().TypeName())
		}
		v, err := fromCEL(m.Get(k), true)
		if err != nil {
			return jvalue{}, err
		}
		entries = append(entries, entry{string(ks), v})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].k < entries[j].k })
	for _, e := range entries {
		if n := applykey.Length(e.k); n > 0 {
			return jvalue{}, errors.New(applykey.TooLong(n))
		}
		out.c.keys = append(out.c.keys, e.k)
		out.c.vals = append(out.c.vals, e.v)
	}
	return out, nil
}

// fromNative converts decoded JSON (as encoding/json or Kubernetes' unstructured decoding
// produce it).
func fromNative(v any, nested bool) (jvalue, error) {
	switch x := v.(type) {
	case nil:
		return jvalue{kind: jNull}, nil
	case bool:
		return jvalue{kind: jBool, b: x}, nil
	case string:
		return jvalue{kind: jString, s: x}, nil
	case int64:
		return jvalue{kind: jNumber, n: intNum(x)}, nil
	case int:
		return jvalue{kind: jNumber, n: intNum(int64(x))}, nil
	case int32:
		return jvalue{kind: jNumber, n: intNum(int64(x))}, nil
	case uint64:
		return jvalue{kind: jNumber, n: uintNum(x)}, nil
	case json.Number:
		if n, ok := parseNumericString(string(x)); ok {
			if n.kind == nFloat {
				return doubleValue(n.f(), nested)
			}
			return jvalue{kind: jNumber, n: n}, nil
		}
		return jvalue{}, fmt.Errorf("%q is not a JSON number", string(x))
	case float64:
		return doubleValue(x, nested)
	case []any:
		out := jvalue{kind: jList, c: &jcomposite{vals: make([]jvalue, 0, len(x))}}
		for _, e := range x {
			je, err := fromNative(e, true)
			if err != nil {
				return jvalue{}, err
			}
			out.c.vals = append(out.c.vals, je)
		}
		return out, nil
	case map[string]any:
		out := jvalue{kind: jMap, c: &jcomposite{keys: make([]string, 0, len(x)), vals: make([]jvalue, 0, len(x))}}
		for k := range x {
			out.c.keys = append(out.c.keys, k)
		}
		sort.Strings(out.c.keys)
		for _, k := range out.c.keys {
			if n := applykey.Length(k); n > 0 {
				return jvalue{}, errors.New(applykey.TooLong(n))
			}
			je, err := fromNative(x[k], true)
			if err != nil {
				return jvalue{}, err
			}
			out.c.vals = append(out.c.vals, je)
		}
		return out, nil
	}
	return fromCEL(types.DefaultTypeAdapter.NativeToValue(v), nested)
}

func doubleValue(f float64, nested bool) (jvalue, error) {
	if nested && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return jvalue{}, errNonFiniteInside
	}
	return jvalue{kind: jNumber, n: floatNum(f)}, nil
}

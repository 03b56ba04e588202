package collector

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
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
// are converted once (docs/rules.md "Collectors" value rules), then compared, grouped and printed from here.
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

// toValue converts to the CombinedStatus value union. A list or map is plain JSON (docs/rules.md "Wire format"): its
// numbers are JSON numbers, written as the top-level `float` text is.
func (v *jvalue) toValue() controlv1alpha1.Value {
	switch v.kind {
	case jBool:
		b := v.b
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: &b}
	case jNumber:
		return numberValue(v.n)
	case jString:
		s := v.s
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeString, String: &s}
	case jList:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeArray, Array: &apiextensionsv1.JSON{Raw: v.appendJSON(nil)}}
	case jMap:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: v.appendJSON(nil)}}
	}
	return nullValue()
}

// appendJSON appends v as compact JSON, keys sorted, strings escaped as encoding/json escapes them
// (as the apiserver writes them back). A list or map never holds a NaN or an infinity (fromCEL
// and fromNative reject them), so every number is a valid JSON number.
func (v *jvalue) appendJSON(buf []byte) []byte {
	switch v.kind {
	case jNull:
		return append(buf, "null"...)
	case jBool:
		return strconv.AppendBool(buf, v.b)
	case jNumber:
		return append(buf, v.n.text()...)
	case jString:
		return appendJSONString(buf, v.s)
	case jList:
		buf = append(buf, '[')
		for i := range v.c.vals {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = v.c.vals[i].appendJSON(buf)
		}
		return append(buf, ']')
	}
	buf = append(buf, '{')
	for i, k := range v.c.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, k)
		buf = append(buf, ':')
		buf = v.c.vals[i].appendJSON(buf)
	}
	return append(buf, '}')
}

func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

func nullValue() controlv1alpha1.Value { return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull} }

func numberValue(n number) controlv1alpha1.Value {
	s := n.text()
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeNumber, Number: &s}
}

// numKind says how a number is held. Integers stay exact.
type numKind uint8

const (
	nInt numKind = iota
	nUint
	nFloat
	nBig // an integer beyond int64/uint64, from a numeric string or an exact sum
)

// number is one number of a collector's values. A Table holds one per row and aggregation
// subject, so it is 24 bytes: the int64, uint64 or float64 in one word (bits), by kind.
type number struct {
	kind numKind
	bits uint64   // nInt: the int64's bits; nUint: the uint64; nFloat: the float64's IEEE 754 bits
	big  *big.Int // nBig
}

func intNum(i int64) number     { return number{kind: nInt, bits: uint64(i)} }
func uintNum(u uint64) number   { return number{kind: nUint, bits: u} }
func floatNum(f float64) number { return number{kind: nFloat, bits: math.Float64bits(f)} }
func bigNum(b *big.Int) number  { return number{kind: nBig, big: b} }
func (n number) i() int64       { return int64(n.bits) }
func (n number) u() uint64      { return n.bits }
func (n number) f() float64     { return math.Float64frombits(n.bits) }

// text is the number's decimal text (docs/rules.md "Collectors"): integers exactly; a double as the shortest decimal
// that reads back as the same double, without an exponent when 1e-6 ≤ |x| < 1e21; NaN, +Inf, -Inf.
func (n number) text() string {
	switch n.kind {
	case nInt:
		return strconv.FormatInt(n.i(), 10)
	case nUint:
		return strconv.FormatUint(n.u(), 10)
	case nBig:
		return n.big.String()
	}
	return formatDouble(n.f())
}

func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case f == 0:
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1.5e-07: drop the exponent's leading zeros
	i := strings.IndexByte(s, 'e')
	mant, exp := s[:i+2], strings.TrimLeft(s[i+2:], "0")
	return mant + exp
}

// rank orders numbers by class: −Inf < finite < +Inf < NaN.
func (n number) rank() int {
	if n.kind != nFloat {
		return 1
	}
	switch {
	case math.IsNaN(n.f()):
		return 3
	case math.IsInf(n.f(), 1):
		return 2
	case math.IsInf(n.f(), -1):
		return 0
	}
	return 1
}

func (n number) bigFloat() *big.Float {
	switch n.kind {
	case nInt:
		return new(big.Float).SetInt64(n.i())
	case nUint:
		return new(big.Float).SetUint64(n.u())
	case nBig:
		return new(big.Float).SetPrec(uint(max(64, n.big.BitLen()))).SetInt(n.big)
	}
	return new(big.Float).SetFloat64(n.f())
}

// compareNumbers is the total order of docs/rules.md "Collectors" on numbers, exact across kinds.
func compareNumbers(a, b number) int {
	if ra, rb := a.rank(), b.rank(); ra != rb || ra != 1 {
		return cmpInt(ra, rb)
	}
	switch {
	case a.kind == nInt && b.kind == nInt:
		return cmpInt(a.i(), b.i())
	case a.kind == nFloat && b.kind == nFloat:
		return cmpInt(a.f(), b.f())
	case a.kind == nUint && b.kind == nUint:
		return cmpInt(a.u(), b.u())
	}
	return a.bigFloat().Cmp(b.bigFloat())
}

func cmpInt[T int | int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keyText is a text that two numbers share exactly when they are equal as JSON values
// (2 and 2.0 are one group).
func (n number) keyText() string {
	if n.kind == nFloat && n.rank() == 1 && n.f() == math.Trunc(n.f()) {
		if math.Abs(n.f()) < 1<<63 {
			return strconv.FormatInt(int64(n.f()), 10)
		}
		i, _ := new(big.Float).SetFloat64(n.f()).Int(nil)
		return i.String()
	}
	if n.kind == nFloat {
		return strconv.FormatFloat(n.f(), 'g', -1, 64) // non-integral: never equal to an integer's text
	}
	return n.text()
}

// appendKey appends an encoding of v to buf such that two values have the same encoding exactly
// when they are equal as JSON values.
func appendKey(buf []byte, v *jvalue) []byte {
	switch v.kind {
	case jNull:
		return append(buf, 'z')
	case jBool:
		if v.b {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case jNumber:
		buf = append(buf, 'n')
		buf = append(buf, v.n.keyText()...)
		return append(buf, ';')
	case jString:
		return appendKeyString(buf, v.s)
	case jList:
		buf = append(buf, 'l')
		buf = strconv.AppendInt(buf, int64(len(v.c.vals)), 10)
		buf = append(buf, ':')
		for i := range v.c.vals {
			buf = appendKey(buf, &v.c.vals[i])
		}
		return buf
	}
	buf = append(buf, 'm')
	buf = strconv.AppendInt(buf, int64(len(v.c.keys)), 10)
	buf = append(buf, ':')
	for i, k := range v.c.keys {
		buf = appendKeyString(buf, k)
		buf = appendKey(buf, &v.c.vals[i])
	}
	return buf
}

func appendKeyString(buf []byte, s string) []byte {
	buf = append(buf, 's')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, ':')
	return append(buf, s...)
}

// compareValues is the group order of docs/rules.md "Collectors": across kinds null < bool < number < string < list
// < map; numbers by value, strings bytewise, lists and maps lexicographically.
func compareValues(a, b *jvalue) int {
	if a.kind != b.kind {
		return cmpInt(int(a.kind), int(b.kind))
	}
	switch a.kind {
	case jBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	case jNumber:
		return compareNumbers(a.n, b.n)
	case jString:
		return strings.Compare(a.s, b.s)
	case jList:
		for i := 0; i < len(a.c.vals) && i < len(b.c.vals); i++ {
			if c := compareValues(&a.c.vals[i], &b.c.vals[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.c.vals), len(b.c.vals))
	case jMap:
		for i := 0; i < len(a.c.keys) && i < len(b.c.keys); i++ {
			if c := strings.Compare(a.c.keys[i], b.c.keys[i]); c != 0 {
				return c
			}
			if c := compareValues(&a.c.vals[i], &b.c.vals[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.c.keys), len(b.c.keys))
	}
	return 0
}

// parseNumericString reads a string subject as a number (docs/rules.md "Collectors"): an optionally signed decimal
// with optional fraction and exponent. NaN, Inf, hex, surrounding spaces and quantities do not
// count. An integer stays exact; anything with a fraction or exponent is a double.
func parseNumericString(s string) (number, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if digits() == 0 {
		return number{}, false
	}
	integer := true
	if i < len(s) && s[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return number{}, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		integer = false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return number{}, false
		}
	}
	if i != len(s) {
		return number{}, false
	}
	if integer {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return intNum(v), true
		}
		b, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
		return bigNum(b), ok
	}
	// Syntax is checked above, so the only possible error is ErrRange, where ParseFloat returns
	// the correctly rounded ±Inf or 0: a decimal too large for a double is an infinite double.
	f, _ := strconv.ParseFloat(s, 64)
	return floatNum(f), true
}

// PlainValue turns a CombinedStatus value back into plain JSON data (nil, bool, string,
// json.Number, []any, map[string]any), e.g. for printing. A Number keeps its exact text; NaN and
// the infinities, which JSON cannot hold, become the strings "NaN", "+Inf" and "-Inf". An Object or
// Array whose JSON does not decode is returned as its raw text.
func PlainValue(v controlv1alpha1.Value) any {
	switch v.Type {
	case controlv1alpha1.TypeString:
		if v.String != nil {
			return *v.String
		}
	case controlv1alpha1.TypeNumber:
		if v.Number == nil {
			return nil
		}
		if n, ok := parseNumericString(*v.Number); ok && n.rank() == 1 {
			return json.Number(*v.Number)
		}
		return *v.Number
	case controlv1alpha1.TypeBool:
		if v.Bool != nil {
			return *v.Bool
		}
	case controlv1alpha1.TypeArray:
		return plainJSON(v.Array)
	case controlv1alpha1.TypeObject:
		return plainJSON(v.Object)
	}
	return nil
}

func plainJSON(j *apiextensionsv1.JSON) any {
	if j == nil || len(j.Raw) == 0 {
		return nil
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(j.Raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return string(j.Raw)
	}
	return out
}

// ValuesEqual says whether two CombinedStatus values are equal as JSON values (2 and 2.0 are
// equal; an Object's key order does not matter). A controller compares what it would write with
// what the apiserver holds, which the apiserver has decoded and re-encoded as Kubernetes does
// (integers as int64, other numbers as float64): Object and Array cells are compared after the same
// decoding, so an integer beyond int64 inside them equals the double the apiserver keeps of it.
func ValuesEqual(a, b controlv1alpha1.Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case controlv1alpha1.TypeArray:
		return jsonCellsEqual(a.Array, b.Array)
	case controlv1alpha1.TypeObject:
		return jsonCellsEqual(a.Object, b.Object)
	}
	return reflect.DeepEqual(a, b)
}

func jsonCellsEqual(a, b *apiextensionsv1.JSON) bool {
	if a == nil || b == nil || bytes.Equal(a.Raw, b.Raw) {
		return (a == nil) == (b == nil)
	}
	var pa, pb any
	if utiljson.Unmarshal(a.Raw, &pa) != nil || utiljson.Unmarshal(b.Raw, &pb) != nil {
		return false
	}
	ja, erra := fromNative(pa, false)
	jb, errb := fromNative(pb, false)
	if erra != nil || errb != nil {
		return false
	}
	return string(appendKey(nil, &ja)) == string(appendKey(nil, &jb))
}

// ResultsEqual says whether two lists of results say the same: the same names, columns, row
// errors and aggregation errors, and cells equal as JSON values (ValuesEqual). A result in an
// earlier wire form (e.g. Objects of nested typed values) is never equal to the current one.
func ResultsEqual(a, b []controlv1alpha1.NamedStatusCombination) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ra, rb := &a[i], &b[i]
		if ra.Name != rb.Name || !slices.Equal(ra.ColumnNames, rb.ColumnNames) ||
			!slices.Equal(ra.RowErrors, rb.RowErrors) || !slices.Equal(ra.AggregationErrors, rb.AggregationErrors) ||
			len(ra.Rows) != len(rb.Rows) {
			return false
		}
		for j := range ra.Rows {
			if !slices.EqualFunc(ra.Rows[j].Columns, rb.Rows[j].Columns, ValuesEqual) {
				return false
			}
		}
	}
	return true
}

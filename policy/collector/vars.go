package collector

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// fieldsVal is the runtime value of an object-typed CEL variable (inventory, returned,
// propagation): a few named fields, some possibly absent. It lives inside an activation, so a
// WEC's variables cost one allocation, not one map each. It holds the fields' plain Go values and
// converts a field to a CEL value only when CEL reads it. CEL selects its fields through
// traits.Mapper.
type fieldsVal struct {
	names   *[2]string // shared per variable kind
	raw     [2]any     // plain values (decoded JSON, label maps), CEL values, or a *string (see rawAt)
	present [2]bool
	vals    [2]ref.Val // CEL values of raw, made on first use
}

var (
	inventoryFields   = [2]string{fieldName, fieldLabels}
	returnedFields    = [2]string{fieldStatus}
	propagationFields = [2]string{fieldLastReturnedUpdateTimestamp}
)

var _ traits.Mapper = (*fieldsVal)(nil)

func (f *fieldsVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return f.field(string(k))
}

func (f *fieldsVal) index(name string) int {
	for i, n := range f.names {
		if n != "" && n == name && f.present[i] {
			return i
		}
	}
	return -1
}

// field returns a present field's CEL value.
func (f *fieldsVal) field(name string) (ref.Val, bool) {
	i := f.index(name)
	if i < 0 {
		return nil, false
	}
	if f.vals[i] == nil {
		f.vals[i] = toRef(f.rawAt(i))
	}
	return f.vals[i], true
}

// rawField returns a present field's plain value.
func (f *fieldsVal) rawField(name string) (any, bool) {
	i := f.index(name)
	if i < 0 {
		return nil, false
	}
	return f.rawAt(i), true
}

// rawAt returns field i's plain value. A string field may be held as a pointer to a string in the
// activation (inventory.name): boxing the string itself would cost an allocation for every WEC,
// whether an expression reads it or not. Decoded JSON never holds a *string.
func (f *fieldsVal) rawAt(i int) any {
	if p, ok := f.raw[i].(*string); ok {
		return *p
	}
	return f.raw[i]
}

// toRef converts a plain value to a CEL value; a CEL value stays as it is.
func toRef(v any) ref.Val {
	if r, ok := v.(ref.Val); ok {
		return r
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

func (f *fieldsVal) Get(key ref.Val) ref.Val {
	if v, ok := f.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

func (f *fieldsVal) Contains(key ref.Val) ref.Val {
	_, ok := f.Find(key)
	return types.Bool(ok)
}

func (f *fieldsVal) Size() ref.Val {
	n := 0
	for _, p := range f.present {
		if p {
			n++
		}
	}
	return types.Int(n)
}

func (f *fieldsVal) Iterator() traits.Iterator {
	var keys []ref.Val
	for i, p := range f.present {
		if p {
			keys = append(keys, types.String(f.names[i]))
		}
	}
	return &keysIterator{keys: keys}
}

func (f *fieldsVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if typeDesc.Kind() == reflect.Map && typeDesc.Key().Kind() == reflect.String {
		return types.DefaultTypeAdapter.NativeToValue(f.Value()).ConvertToNative(typeDesc)
	}
	if typeDesc.Kind() == reflect.Interface && reflect.TypeOf(f.Value()).Implements(typeDesc) {
		return f.Value(), nil
	}
	return nil, fmt.Errorf("type conversion error from map to %v", typeDesc)
}

func (f *fieldsVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return f
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to %s", t.TypeName())
}

func (f *fieldsVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok || o.Size() != f.Size() {
		return types.False
	}
	for i, p := range f.present {
		if !p {
			continue
		}
		v, _ := f.field(f.names[i])
		ov, found := o.Find(types.String(f.names[i]))
		if !found || v.Equal(ov) != types.True {
			return types.False
		}
	}
	return types.True
}

func (f *fieldsVal) Type() ref.Type { return types.MapType }

// Value is the fields as a plain map of their values.
func (f *fieldsVal) Value() any {
	m := map[string]any{}
	for i, p := range f.present {
		if p {
			m[f.names[i]] = f.rawAt(i)
		}
	}
	return m
}

// keysIterator iterates over a fieldsVal's present field names.
type keysIterator struct {
	keys []ref.Val
	i    int
}

var _ traits.Iterator = (*keysIterator)(nil)

func (it *keysIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keysIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	it.i++
	return it.keys[it.i-1]
}

func (it *keysIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}

func (it *keysIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("type conversion on iterators not supported")
}
func (it *keysIterator) Equal(ref.Val) ref.Val { return types.False }
func (it *keysIterator) Type() ref.Type        { return types.IteratorType }
func (it *keysIterator) Value() any            { return nil }

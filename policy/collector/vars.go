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
// WEC's variables cost one allocation, not one map each. CEL selects its fields through
// traits.Mapper.
type fieldsVal struct {
	names *[2]string // shared per variable kind
	vals  [2]ref.Val // nil: the field is absent
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

// field returns a present field's value.
func (f *fieldsVal) field(name string) (ref.Val, bool) {
	for i, n := range f.names {
		if n != "" && n == name && f.vals[i] != nil {
			return f.vals[i], true
		}
	}
	return nil, false
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
	for _, v := range f.vals {
		if v != nil {
			n++
		}
	}
	return types.Int(n)
}

func (f *fieldsVal) Iterator() traits.Iterator {
	var keys []ref.Val
	for i, v := range f.vals {
		if v != nil {
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
	for i, v := range f.vals {
		if v == nil {
			continue
		}
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
	for i, v := range f.vals {
		if v != nil {
			m[f.names[i]] = v.Value()
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

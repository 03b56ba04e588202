package compactjson

import "slices"

// Object is a JSON object in compact form: its encoding (one string, which holds no pointers)
// beside what the encoding refers to — the key sets of its objects and the rare values that are
// not plain decoded JSON. It is never modified once made.
type Object struct {
	data string // the object's encoding, from its tag on (a nested object's view shares its parent's)
	ext  *ext
}

// ext is what an encoding refers to outside its bytes: the key sets of its objects in the order
// they first appear (an object's tag is followed by its key set's index here), and the values kept
// as they are (tagOther). Values of one shape with nothing kept share one ext through KeySets.
type ext struct {
	sets  []*keySet
	other []any
}

// keySet is the sorted keys of an object, shared by the objects with those keys.
type keySet struct{ names []string }

// The encoding: a tag byte, then what the tag says follows.
const (
	tagNull   byte = iota
	tagFalse       //
	tagTrue        //
	tagInt         // an int64, zig-zag varint
	tagFloat       // a float64, its IEEE 754 bits little-endian (8 bytes)
	tagString      // uvarint length, the bytes
	tagList        // uvarint count, the elements
	tagObject      // uvarint index of the key set in ext.sets, the values in key order
	tagOther       // uvarint index in ext.other: a value that is not plain decoded JSON, kept as is
)

// Len returns the number of fields.
func (o *Object) Len() int {
	d := decoder{data: o.data, ext: o.ext}
	return len(d.objectKeys().names)
}

// Get returns the value of a field in compact form: an object as an *Object (a view of o's
// encoding), a list with its objects compact, scalars as they are.
func (o *Object) Get(key string) (any, bool) {
	d := decoder{data: o.data, ext: o.ext, compact: true}
	ks := d.objectKeys()
	i, ok := slices.BinarySearch(ks.names, key)
	if !ok {
		return nil, false
	}
	for range i {
		d.skip()
	}
	return d.value(), true
}

// Compact returns v (plain decoded JSON) in compact form: every object becomes an *Object that
// holds a copy of everything in it (an object's strings, numbers and lists become bytes of its
// encoding; values other than plain decoded JSON are kept as they are), a list holding objects is
// copied with its elements compacted, and everything else (scalars, lists of scalars) is v itself.
// v is not modified. Key sets are shared through sets.
func Compact(v any, sets *KeySets) any {
	c, _ := compact(v, sets)
	return c
}

// compact is Compact, and whether the result differs from v (a new value).
func compact(v any, sets *KeySets) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return v, false
		}
		e := encoders.Get().(*encoder)
		defer e.release()
		e.ks = sets
		e.value(x)
		o := &Object{data: string(e.buf)}
		if len(e.other) == 0 {
			o.ext = sets.shape(e.sets)
		} else {
			o.ext = &ext{sets: slices.Clone(e.sets), other: slices.Clone(e.other)}
		}
		return o, true
	case []any:
		return mapList(x, func(e any) (any, bool) { return compact(e, sets) })
	}
	return v, false
}

// mapList applies f to each element of l; it returns l itself when f changed none, else a copy
// with f's results.
func mapList(l []any, f func(any) (any, bool)) ([]any, bool) {
	var out []any
	for i, e := range l {
		r, changed := f(e)
		if changed && out == nil {
			out = make([]any, len(l))
			copy(out, l[:i])
		}
		if out != nil {
			out[i] = r
		}
	}
	if out == nil {
		return l, false
	}
	return out, true
}

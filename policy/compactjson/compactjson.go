package compactjson

import (
	"hash/maphash"
	"slices"
	"sort"
	"sync"
)

// Object is a JSON object in compact form: its values in the order of its sorted keys. It is
// never modified once made.
type Object struct {
	keys *keySet
	vals []any
}

// keySet is the sorted keys of an object, shared by the objects with those keys.
type keySet struct{ names []string }

// Len returns the number of fields.
func (o *Object) Len() int { return len(o.vals) }

// Get returns the value of a field (compact, as held).
func (o *Object) Get(key string) (any, bool) {
	i, ok := slices.BinarySearch(o.keys.names, key)
	if !ok {
		return nil, false
	}
	return o.vals[i], true
}

// KeySets shares key sets between the objects Compact makes. It is bounded: when it holds max
// sets it starts afresh (objects made before keep theirs), so objects of ever-new key sets cannot
// make it grow without limit. It is safe for concurrent use. A nil *KeySets shares nothing.
type KeySets struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64][]*keySet
	n    int
	max  int
}

// NewKeySets returns a KeySets that holds at most max key sets.
func NewKeySets(max int) *KeySets {
	return &KeySets{seed: maphash.MakeSeed(), m: map[uint64][]*keySet{}, max: max}
}

// emptyKeys is the key set of every empty object.
var emptyKeys = &keySet{}

// get returns the shared key set equal to names (sorted; not retained unless it is new).
func (s *KeySets) get(names []string) *keySet {
	if len(names) == 0 {
		return emptyKeys
	}
	if s == nil {
		return &keySet{names: slices.Clip(names)}
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, n := range names {
		h.WriteString(n)
		h.WriteByte(0)
	}
	sum := h.Sum64()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ks := range s.m[sum] {
		if slices.Equal(ks.names, names) {
			return ks
		}
	}
	if s.n >= s.max {
		clear(s.m)
		s.n = 0
	}
	ks := &keySet{names: slices.Clip(names)}
	s.m[sum] = append(s.m[sum], ks)
	s.n++
	return ks
}

// Len returns the number of key sets held.
func (s *KeySets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Compact returns v (plain decoded JSON) in compact form: every object becomes an *Object, lists
// holding objects are copied with their elements compacted, and everything else (scalars, lists
// of scalars) is shared with v. v is not modified. Key sets are shared through sets.
func Compact(v any, sets *KeySets) any {
	c, _ := compact(v, sets)
	return c
}

// compact is Compact, and whether the result differs from v (a new value).
func compact(v any, sets *KeySets) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		ks := sets.get(names)
		o := &Object{keys: ks}
		if len(x) > 0 {
			o.vals = make([]any, len(ks.names))
			for i, k := range ks.names {
				o.vals[i], _ = compact(x[k], sets)
			}
		}
		return o, true
	case []any:
		out, changed := mapList(x, func(e any) (any, bool) { return compact(e, sets) })
		return out, changed
	}
	return v, false
}

// Expand returns v in plain form (map[string]any for every *Object), sharing with v what has no
// object inside. The result is the caller's to read; the maps and lists it makes are new, but
// what it shares with v must not be modified.
func Expand(v any) any {
	e, _ := expand(v)
	return e
}

func expand(v any) (any, bool) {
	switch x := v.(type) {
	case *Object:
		m := make(map[string]any, len(x.vals))
		for i, k := range x.keys.names {
			m[k], _ = expand(x.vals[i])
		}
		return m, true
	case []any:
		return mapList(x, expand)
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

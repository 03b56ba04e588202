package compactjson

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

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

// KeySets shares key sets, and the key-set lists of values of one shape, between the objects
// Compact makes. It is bounded: when it holds max entries it starts afresh (objects made before
// keep theirs), so objects of ever-new key sets cannot make it grow without limit. It is safe for
// concurrent use. A nil *KeySets shares nothing.
type KeySets struct {
	mu     sync.Mutex
	seed   maphash.Seed
	m      map[uint64][]*keySet
	shapes map[uint64][]*ext
	n      int
	max    int
}

// NewKeySets returns a KeySets that holds at most max key sets and shapes.
func NewKeySets(max int) *KeySets {
	return &KeySets{seed: maphash.MakeSeed(), m: map[uint64][]*keySet{}, shapes: map[uint64][]*ext{}, max: max}
}

// emptyKeys is the key set of every empty object.
var emptyKeys = &keySet{}

// reserve makes room for one more entry, starting afresh when full. s.mu is held.
func (s *KeySets) reserve() {
	if s.n >= s.max {
		clear(s.m)
		clear(s.shapes)
		s.n = 0
	}
	s.n++
}

// get returns the shared key set equal to names (sorted; neither the slice nor its strings are
// retained).
func (s *KeySets) get(names []string) *keySet {
	if len(names) == 0 {
		return emptyKeys
	}
	if s == nil {
		return newKeySet(names)
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, n := range names {
		h.WriteString(n)
		h.WriteByte(0)
	}
	return held(s, s.m, h.Sum64(), func(ks *keySet) bool { return slices.Equal(ks.names, names) },
		func() *keySet { return newKeySet(names) })
}

// newKeySet returns a key set of copies of names (which may be views of a larger buffer).
func newKeySet(names []string) *keySet {
	ks := &keySet{names: make([]string, len(names))}
	for i, n := range names {
		ks.names[i] = strings.Clone(n)
	}
	return ks
}

// shape returns the shared ext of values whose objects have the key sets sets (not retained),
// in that order, and nothing kept as is.
func (s *KeySets) shape(sets []*keySet) *ext {
	if s == nil {
		return &ext{sets: slices.Clone(sets)}
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, ks := range sets {
		maphash.WriteComparable(&h, ks)
	}
	return held(s, s.shapes, h.Sum64(), func(e *ext) bool { return slices.Equal(e.sets, sets) },
		func() *ext { return &ext{sets: slices.Clone(sets)} })
}

// held returns the entry of m (one of s's tables) under hash sum that is equal (equal), adding
// the one that mk returns when there is none.
func held[T any](s *KeySets, m map[uint64][]*T, sum uint64, equal func(*T) bool, mk func() *T) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range m[sum] {
		if equal(v) {
			return v
		}
	}
	s.reserve() // may clear m (and the other table), which stays the same map
	v := mk()
	m[sum] = append(m[sum], v)
	return v
}

// Len returns the number of key sets and shapes held.
func (s *KeySets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
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

// encoder encodes one value; encoders keeps them for reuse.
type encoder struct {
	buf   []byte
	ks    *KeySets
	sets  []*keySet
	index map[*keySet]int // the index of each of sets, once there are many
	other []any
	names []string // scratch: the keys of the objects being encoded
}

var encoders = sync.Pool{New: func() any { return &encoder{} }}

// manySets is the number of key sets in one value from which encoder looks them up in a map.
const manySets = 8

func (e *encoder) release() {
	e.buf, e.sets, e.other, e.names = e.buf[:0], e.sets[:0], e.other[:0], e.names[:0]
	clear(e.sets[:cap(e.sets)])
	clear(e.other[:cap(e.other)])
	clear(e.names[:cap(e.names)])
	e.index, e.ks = nil, nil
	encoders.Put(e)
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, tagNull)
	case bool:
		if x {
			e.buf = append(e.buf, tagTrue)
		} else {
			e.buf = append(e.buf, tagFalse)
		}
	case int64:
		e.int(x)
	case float64:
		e.float(x)
	case string:
		e.string(x)
	case []any:
		if x == nil {
			e.keep(v)
			return
		}
		e.buf = binary.AppendUvarint(append(e.buf, tagList), uint64(len(x)))
		for _, el := range x {
			e.value(el)
		}
	case map[string]any:
		if x == nil {
			e.keep(v)
			return
		}
		start := len(e.names)
		for k := range x {
			e.names = append(e.names, k)
		}
		sort.Strings(e.names[start:])
		ks := e.ks.get(e.names[start:])
		e.names = e.names[:start]
		e.objectTag(ks)
		for _, k := range ks.names {
			e.value(x[k])
		}
	default:
		e.keep(v)
	}
}

// int, float and string append a scalar; objectTag appends an object's tag and key set (its
// values follow in key order). Compact's encoder and Decode share them.
func (e *encoder) int(x int64) { e.buf = binary.AppendVarint(append(e.buf, tagInt), x) }

func (e *encoder) float(x float64) {
	e.buf = binary.LittleEndian.AppendUint64(append(e.buf, tagFloat), math.Float64bits(x))
}

func (e *encoder) string(x string) {
	e.buf = append(binary.AppendUvarint(append(e.buf, tagString), uint64(len(x))), x...)
}

func (e *encoder) objectTag(ks *keySet) {
	e.buf = binary.AppendUvarint(append(e.buf, tagObject), uint64(e.setIndex(ks)))
}

// keep appends a value kept as it is.
func (e *encoder) keep(v any) {
	e.buf = binary.AppendUvarint(append(e.buf, tagOther), uint64(len(e.other)))
	e.other = append(e.other, v)
}

// setIndex returns ks's index in e.sets, adding it.
func (e *encoder) setIndex(ks *keySet) int {
	if e.index == nil {
		if i := slices.Index(e.sets, ks); i >= 0 {
			return i
		}
		if len(e.sets) == manySets {
			e.index = make(map[*keySet]int, 2*manySets)
			for i, s := range e.sets {
				e.index[s] = i
			}
		}
	} else if i, ok := e.index[ks]; ok {
		return i
	}
	if e.index != nil {
		e.index[ks] = len(e.sets)
	}
	e.sets = append(e.sets, ks)
	return len(e.sets) - 1
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
		d := decoder{data: x.data, ext: x.ext}
		return d.value(), true
	case []any:
		return mapList(x, expand)
	}
	return v, false
}

// decoder reads an encoding: plain values, or compact ones (objects as views) for Get.
type decoder struct {
	data    string
	pos     int
	ext     *ext
	compact bool
}

func (d *decoder) uvarint() uint64 {
	var x uint64
	for shift := 0; ; shift += 7 {
		b := d.data[d.pos]
		d.pos++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
}

// objectKeys reads an object's tag and key set.
func (d *decoder) objectKeys() *keySet {
	d.pos++ // tagObject
	return d.ext.sets[d.uvarint()]
}

func (d *decoder) value() any {
	start := d.pos
	tag := d.data[d.pos]
	d.pos++
	switch tag {
	case tagNull:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		u := d.uvarint()
		return int64(u>>1) ^ -int64(u&1)
	case tagFloat:
		bits := uint64(0)
		for i := range 8 {
			bits |= uint64(d.data[d.pos+i]) << (8 * i)
		}
		d.pos += 8
		return math.Float64frombits(bits)
	case tagString:
		n := int(d.uvarint())
		s := d.data[d.pos : d.pos+n]
		d.pos += n
		return s
	case tagList:
		l := make([]any, d.uvarint())
		for i := range l {
			l[i] = d.value()
		}
		return l
	case tagObject:
		ks := d.ext.sets[d.uvarint()]
		if d.compact {
			for range ks.names {
				d.skip()
			}
			return &Object{data: d.data[start:d.pos], ext: d.ext}
		}
		m := make(map[string]any, len(ks.names))
		for _, k := range ks.names {
			m[k] = d.value()
		}
		return m
	default: // tagOther
		v := d.ext.other[d.uvarint()]
		if d.compact {
			return v
		}
		return Expand(v)
	}
}

// skip moves past one value.
func (d *decoder) skip() {
	tag := d.data[d.pos]
	d.pos++
	switch tag {
	case tagInt, tagOther:
		d.uvarint()
	case tagFloat:
		d.pos += 8
	case tagString:
		d.pos += int(d.uvarint())
	case tagList:
		for range d.uvarint() {
			d.skip()
		}
	case tagObject:
		for range d.ext.sets[d.uvarint()].names {
			d.skip()
		}
	}
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

package compactjson

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"sync"
)

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

// release empties e, keeping its buffers, and puts it back into encoders.
func (e *encoder) release() {
	e.buf, e.sets, e.other, e.names = e.buf[:0], e.sets[:0], e.other[:0], e.names[:0]
	clear(e.sets[:cap(e.sets)])
	clear(e.other[:cap(e.other)])
	clear(e.names[:cap(e.names)])
	e.index, e.ks = nil, nil
	encoders.Put(e)
}

// value appends the encoding of v.
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

package compactjson

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

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

package aggregation

import (
	"slices"
	"sort"
)

// load fills a fresh State with wecs in one go (what Returned does): one allocation per column
// instead of one per WEC, no name map until someone upserts.
func (s *State) load(wecs []WEC) {
	s.sync()
	n := len(wecs)
	s.meta = slices.Grow(s.meta[:0], n)
	s.order = slices.Grow(s.order[:0], n)
	sorted := true
	for i, w := range wecs {
		s.meta = append(s.meta, wecMeta{WEC: w})
		s.order = append(s.order, int32(i))
		if i > 0 && wecs[i-1].Name >= w.Name {
			sorted = false
		}
		if w.Status != nil {
			s.nReported++
		}
	}
	if !sorted {
		sort.SliceStable(s.order, func(a, b int) bool { return s.meta[s.order[a]].Name < s.meta[s.order[b]].Name })
		for k := 1; k < n; k++ {
			if s.meta[s.order[k-1]].Name == s.meta[s.order[k]].Name { // duplicates: the last one wins, as with UpsertWEC
				clear(s.meta)
				s.meta, s.order, s.nReported = s.meta[:0], s.order[:0], 0
				s.load(lastOfEachName(wecs))
				return
			}
		}
	}
	s.slot = nil
	if s.pl == nil {
		for sl := range s.meta {
			s.prepare(int32(sl))
		}
		return
	}
	if len(s.xs) < len(s.pl.fields) {
		s.xs = make([][]fvExtra, len(s.pl.fields))
	}
	for i := range s.pl.fields {
		s.cols[i] = slices.Grow(s.cols[i][:0], n)[:n]
		if needsExtra(s.pl.fields[i].op) {
			s.xs[i] = slices.Grow(s.xs[i][:0], n)[:n]
		}
	}
	s.bulk = true
	for sl := range s.meta {
		s.prepare(int32(sl))
	}
	s.bulk = false
}

// lastOfEachName returns wecs, in their order, without every WEC whose name comes again later: of
// WECs with one name, the last one wins.
func lastOfEachName(wecs []WEC) []WEC {
	last := make(map[string]int, len(wecs))
	for i, w := range wecs {
		last[w.Name] = i
	}
	dedup := make([]WEC, 0, len(last))
	for i, w := range wecs {
		if last[w.Name] == i {
			dedup = append(dedup, w)
		}
	}
	return dedup
}

// position returns where name is, or would be, in s.order.
func (s *State) position(name string) int {
	return sort.Search(len(s.order), func(k int) bool { return s.meta[s.order[k]].Name >= name })
}

// slots returns the WEC name → slot map, building it after a bulk load.
func (s *State) slots() map[string]int32 {
	if s.slot == nil {
		s.slot = make(map[string]int32, len(s.meta))
		for i := range s.meta {
			s.slot[s.meta[i].Name] = int32(i)
		}
	}
	return s.slot
}

// UpsertWEC adds a WEC or replaces what it reported.
func (s *State) UpsertWEC(w WEC) {
	sl, ok := s.slots()[w.Name]
	if ok {
		s.forget(sl)
		s.markExtras(s.meta[sl].Status, w.Status)
		s.meta[sl] = wecMeta{WEC: w, current: s.meta[sl].current}
	} else {
		s.allDirt = true
		s.xValid = false
		sl = int32(len(s.meta))
		s.meta = append(s.meta, wecMeta{WEC: w})
		for i := range s.cols {
			s.cols[i] = append(s.cols[i], fv{})
		}
		s.slot[w.Name] = sl
		if n := len(s.order); n == 0 || s.meta[s.order[n-1]].Name < w.Name {
			s.order = append(s.order, sl) // WECs often arrive in name order
		} else {
			k := s.position(w.Name)
			s.order = append(s.order, 0)
			copy(s.order[k+1:], s.order[k:])
			s.order[k] = sl
		}
	}
	if w.Status != nil {
		s.nReported++
	}
	if s.mod != nil {
		s.prepare(sl)
	}
}

// forget undoes a slot's contribution to the State's counters.
func (s *State) forget(sl int32) {
	if s.meta[sl].extra {
		s.nExtra--
	}
	if s.meta[sl].Status != nil {
		s.nReported--
	}
}

// RemoveWEC forgets a WEC.
func (s *State) RemoveWEC(name string) {
	sl, ok := s.slots()[name]
	if !ok {
		return
	}
	s.forget(sl)
	s.allDirt = true
	s.xValid = false
	k := s.position(name)
	s.order = append(s.order[:k], s.order[k+1:]...)
	delete(s.slot, name)
	last := int32(len(s.meta) - 1)
	if sl != last { // move the last slot into the freed one
		s.meta[sl] = s.meta[last]
		for i := range s.cols {
			s.cols[i][sl] = s.cols[i][last]
		}
		s.slot[s.meta[sl].Name] = sl
		s.order[s.position(s.meta[sl].Name)] = sl
	}
	s.meta = s.meta[:last]
	for i := range s.cols {
		s.cols[i] = s.cols[i][:last]
	}
}

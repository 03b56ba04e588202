package inputs

import (
	"iter"
	"slices"
)

// FeedMark records the evaluation that last brought a consumer (a Table, a returned-status State)
// fully up to date, and the inputs every WEC's row depends on at that time.
type FeedMark struct {
	epoch      uint64 // itscache.WECIndex epoch; 0: never fed
	prunerRV   string
	clusterGen uint64
}

// fedBy reports whether the evaluation before in brought the consumer fully up to date with
// in's classifier and inventory labels: then feeding in.changed is enough.
func (m *FeedMark) fedBy(in *Object) bool {
	return m.epoch != 0 && m.epoch == in.prevEpoch && m.prunerRV == in.prunerRV && m.clusterGen == in.clusterGen
}

func (m *FeedMark) Fed(in *Object) {
	m.epoch, m.prunerRV, m.clusterGen = in.epoch, in.prunerRV, in.clusterGen
}

// Stale brings a consumer's WEC set (*have) to want (sorted) — of the WECs it was fed (fed), those
// that left it are dropped — and returns the WECs of want whose rows may be out of date: those
// changed since the previous evaluation when that one fed the consumer and the set is the same,
// else all of want.
func (m *FeedMark) Stale(in *Object, have *[]string, want []string, fed iter.Seq[string], drop func(wec string)) []string {
	full := !m.fedBy(in)
	if !slices.Equal(*have, want) {
		var gone []string
		for name := range fed {
			if _, ok := slices.BinarySearch(want, name); !ok {
				gone = append(gone, name)
			}
		}
		for _, name := range gone {
			drop(name)
		}
		*have = want
		full = true
	}
	if full {
		return want
	}
	out := make([]string, 0, len(in.changed))
	for _, name := range in.changed {
		if _, ok := slices.BinarySearch(want, name); ok {
			out = append(out, name)
		}
	}
	return out
}

package load

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// HeapSplit attributes a heap profile's in-use bytes by where they were allocated.
type HeapSplit struct {
	Total int64
	// Informers: allocated under client-go's informer machinery (reflector, store, decoding).
	Informers int64
	// Statusfold: allocated under statusfold's own code (engines, tables, queues).
	Statusfold int64
}

// informerPrefixes are the packages that fill informer caches: the reflector (lists), the watch
// decoders (each watch event is decoded in the stream watcher's goroutine) and controller-runtime's
// cache.
var informerPrefixes = []string{
	"k8s.io/client-go/tools/cache.",
	"k8s.io/apimachinery/pkg/watch.",
	"k8s.io/client-go/rest/watch.",
	"sigs.k8s.io/controller-runtime/pkg/cache",
}

const statusfoldPrefix = "github.com/statusfold/statusfold/"

// heapOwner says whose a sample's bytes are, from the frame nearest the leaf that is either
// statusfold's or informer code: "statusfold", "informers" or "".
func heapOwner(frames []string) string {
	for _, name := range frames {
		if strings.HasPrefix(name, statusfoldPrefix) {
			return "statusfold"
		}
		for _, p := range informerPrefixes {
			if strings.HasPrefix(name, p) {
				return "informers"
			}
		}
	}
	return ""
}

// SplitHeap reads a heap profile and attributes each sample's in-use bytes with heapOwner.
func SplitHeap(path string) (HeapSplit, error) {
	var hs HeapSplit
	p, err := readProfile(path)
	if err != nil {
		return hs, err
	}
	idx := sampleIndex(p, "inuse_space")
	if idx < 0 {
		return hs, fmt.Errorf("%s: no inuse_space", path)
	}
	for _, s := range p.Sample {
		v := s.Value[idx]
		hs.Total += v
		var frames []string
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				frames = append(frames, line.Function.Name)
			}
		}
		switch heapOwner(frames) {
		case "statusfold":
			hs.Statusfold += v
		case "informers":
			hs.Informers += v
		}
	}
	return hs, nil
}

// HotSpot is one function's share of a CPU profile.
type HotSpot struct {
	Function string  `json:"function"`
	FlatPct  float64 `json:"flatPct"`
	CumPct   float64 `json:"cumPct"`
}

// TopFunctions returns the n functions with the most cumulative CPU time that belong to
// statusfold or that are the hottest by flat time, ordered by cumulative time.
func TopFunctions(path string, n int) ([]HotSpot, error) {
	p, err := readProfile(path)
	if err != nil {
		return nil, err
	}
	idx := sampleIndex(p, "cpu")
	if idx < 0 {
		idx = len(p.SampleType) - 1
	}
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		seen := map[string]bool{}
		for i, loc := range s.Location {
			for _, line := range loc.Line {
				name := line.Function.Name
				if i == 0 {
					flat[name] += v
				}
				if !seen[name] {
					cum[name] += v
					seen[name] = true
				}
			}
		}
	}
	if total == 0 {
		return nil, nil
	}
	var out []HotSpot
	for name, c := range cum {
		out = append(out, HotSpot{Function: name, FlatPct: 100 * float64(flat[name]) / float64(total), CumPct: 100 * float64(c) / float64(total)})
	}
	// Statusfold functions by cumulative time, then everything by flat time.
	sort.Slice(out, func(a, b int) bool { return out[a].CumPct > out[b].CumPct })
	var top []HotSpot
	for _, h := range out {
		if strings.HasPrefix(h.Function, statusfoldPrefix) && len(top) < n {
			top = append(top, h)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].FlatPct > out[b].FlatPct })
	for _, h := range out[:min(n, len(out))] {
		top = append(top, h)
	}
	return top, nil
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return profile.Parse(f)
}

func sampleIndex(p *profile.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return -1
}

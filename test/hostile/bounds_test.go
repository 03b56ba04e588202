package hostile

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/statusfold/statusfold/internal/memtest"
)

// The bounds every case of testdata/aggregation-bounds.yaml must keep besides its outcome: twice
// the engine's default time bound for one object (1 s), and a heap growth of at most 256 MiB.
const (
	boundsTime = 2 * time.Second
	boundsHeap = 256 << 20
)

// TestAggregationBounds runs the sandbox-bound cases one at a time (alone, so that time and heap
// are theirs), each checked as TestCorpus checks it, and measures its time and heap growth.
func TestAggregationBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("measures time: not with -short")
	}
	r := &runner{agg: nil}
	var worstTime time.Duration
	var worstHeap uint64
	n := 0
	for _, c := range loadCorpus(t) {
		if filepath.Base(c.file) != "aggregation-bounds.yaml" {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			heap, d := memtest.HeapGrowth(func() { r.run(t, c) })
			t.Logf("%s, heap +%d MiB", d, heap>>20)
			worstTime, worstHeap = max(worstTime, d), max(worstHeap, heap)
			if d > boundsTime {
				t.Errorf("took %s, more than %s", d, boundsTime)
			}
			if heap > boundsHeap {
				t.Errorf("the heap grew by %d MiB, more than %d MiB", heap>>20, boundsHeap>>20)
			}
		})
	}
	if n < 15 {
		t.Errorf("%d sandbox-bound cases, want at least 15", n)
	}
	t.Logf("%d cases; the slowest took %s, the largest heap growth was %d MiB", n, worstTime, worstHeap>>20)
}

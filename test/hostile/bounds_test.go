package hostile

import (
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
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
			heap, d := heapGrowth(func() { r.run(t, c) })
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

// heapGrowth runs f and returns how far the heap rose above its level before f (sampled every
// 2 ms) and how long f took.
func heapGrowth(f func()) (uint64, time.Duration) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := read(); h > base && h-base > peak.Load() {
				peak.Store(h - base)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	d := time.Since(start)
	close(stop)
	<-done
	return peak.Load(), d
}

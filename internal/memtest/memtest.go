// Package memtest measures memory in tests: how far a function makes the heap grow. The tests of
// the bounds on user code (the aggregation engine's, the hostile-input suite's) share it.
package memtest

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// HeapGrowth runs f and returns how far the live heap (runtime/metrics'
// /memory/classes/heap/objects:bytes) rose above its level before f, sampled every 2 ms after a
// collection, and how long f took.
func HeapGrowth(f func()) (uint64, time.Duration) {
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

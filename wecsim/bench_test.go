package wecsim

import (
	"fmt"
	"testing"
)

// BenchmarkObserve is one tick of a Deployment over 1,000 simulated WECs (the cost wec-sim adds
// per object and tick in load tests, before any apiserver write).
func BenchmarkObserve(b *testing.B) {
	sc := NewScenario(1, 1000)
	sim := NewSimulator(sc)
	obj := deployment(1, 3)
	names := make([]string, len(sc.WECs))
	for i, w := range sc.WECs {
		names[i] = w.Name
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for _, n := range names {
			if _, ok := sim.Observe(obj, n, i, at(i)); !ok && i > sc.LagTicks {
				b.Fatal(fmt.Sprintf("%s reported nothing at tick %d", n, i))
			}
		}
	}
}

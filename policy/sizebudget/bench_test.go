package sizebudget

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkResultsWithinBudget is the cost every CombinedStatus write pays for the budget when
// the object fits: one encoding to measure it (a load-test-sized object: up to 3 results of up
// to 20 rows).
func BenchmarkResultsWithinBudget(b *testing.B) {
	cs := randomCS(rand.New(rand.NewPCG(1, 1)), 20, 20)
	b.ReportAllocs()
	for b.Loop() {
		Results(cs, DefaultBytes)
	}
}

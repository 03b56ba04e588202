package load

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Latency summarises a set of latency samples.
type Latency struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P95   time.Duration `json:"p95"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
	Mean  time.Duration `json:"mean"`
}

// Summarize computes the percentiles of samples by the nearest-rank method: the p-th percentile is
// the smallest sample such that at least p% of the samples are less than or equal to it. It does
// not modify samples.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		Count: len(s),
		P50:   nearestRank(s, 50),
		P95:   nearestRank(s, 95),
		P99:   nearestRank(s, 99),
		Max:   s[len(s)-1],
		Mean:  sum / time.Duration(len(s)),
	}
}

// nearestRank returns the p-th percentile of the sorted, non-empty slice s.
func nearestRank(s []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	return s[rank-1]
}

func (l Latency) String() string {
	return fmt.Sprintf("n=%d p50=%s p95=%s p99=%s max=%s", l.Count, ms(l.P50), ms(l.P95), ms(l.P99), ms(l.Max))
}

// ms prints a duration in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

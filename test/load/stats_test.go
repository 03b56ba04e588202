package load

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	msd := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- { // reversed, so that sorting matters
		hundred = append(hundred, msd(i))
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    Latency
	}{
		{name: "empty", samples: nil, want: Latency{}},
		{name: "one", samples: []time.Duration{msd(7)}, want: Latency{Count: 1, P50: msd(7), P95: msd(7), P99: msd(7), Max: msd(7), Mean: msd(7)}},
		{
			name:    "1..100",
			samples: hundred,
			// nearest rank: p50 is the 50th value, p95 the 95th, p99 the 99th; mean 50.5 ms.
			want: Latency{Count: 100, P50: msd(50), P95: msd(95), P99: msd(99), Max: msd(100), Mean: 50*time.Millisecond + 500*time.Microsecond},
		},
		{
			name:    "four values",
			samples: []time.Duration{msd(4), msd(1), msd(3), msd(2)},
			// ceil(0.5*4)=2 -> 2ms; ceil(0.95*4)=4 -> 4ms.
			want: Latency{Count: 4, P50: msd(2), P95: msd(4), P99: msd(4), Max: msd(4), Mean: 2500 * time.Microsecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]time.Duration(nil), tt.samples...)
			got := Summarize(tt.samples)
			if got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
			for i := range before {
				if before[i] != tt.samples[i] {
					t.Fatalf("Summarize modified its input at %d", i)
				}
			}
		})
	}
}

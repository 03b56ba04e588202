package load

import (
	"testing"
	"time"
)

func TestStalenessWindows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	updates := []Update{
		{Sent: at(1), Reflected: at(1.5)},     // window 0: 0.5 s
		{Sent: at(8), Reflected: at(12)},      // window 0: outstanding, age 2 s; window 1: 4 s
		{Sent: at(9), Reflected: time.Time{}}, // never: window 0 age 1 s, window 1 age 11 s, window 2 age 21 s
		{Sent: at(15), Reflected: at(15.25)},  // window 1: 0.25 s
		{Sent: at(25), Reflected: at(31)},     // window 2: outstanding, age 5 s (reflected after the last window)
		{Sent: at(-1), Reflected: at(-0.5)},   // before the phase: in no window
	}
	got := StalenessWindows(updates, t0, 10*time.Second, 3)
	want := []struct {
		reflected, outstanding int
		p99, p50               time.Duration
	}{
		{reflected: 1, outstanding: 2, p99: sec(2), p50: sec(1)},
		{reflected: 2, outstanding: 1, p99: sec(11), p50: sec(4)},
		{reflected: 0, outstanding: 2, p99: sec(21), p50: sec(5)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d windows, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g.Start != time.Duration(k)*10*time.Second || g.End != time.Duration(k+1)*10*time.Second {
			t.Errorf("window %d spans %s–%s", k, g.Start, g.End)
		}
		if g.Reflected != w.reflected || g.Outstanding != w.outstanding || g.Staleness.P99 != w.p99 || g.Staleness.P50 != w.p50 {
			t.Errorf("window %d = reflected %d, outstanding %d, p50 %s, p99 %s; want %d, %d, %s, %s",
				k, g.Reflected, g.Outstanding, g.Staleness.P50, g.Staleness.P99, w.reflected, w.outstanding, w.p50, w.p99)
		}
	}
}

func TestTrendOf(t *testing.T) {
	win := func(k int, p99 time.Duration) Window {
		return Window{Start: time.Duration(k) * 10 * time.Second, End: time.Duration(k+1) * 10 * time.Second, Staleness: Latency{P99: p99}}
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name string
		ws   []Window
		want Trend
	}{
		{name: "none", ws: nil, want: Trend{}},
		{name: "one", ws: []Window{win(0, ms(300))}, want: Trend{First: ms(300), Last: ms(300), Worst: ms(300)}},
		{
			name: "flat",
			ws:   []Window{win(0, ms(300)), win(1, ms(300)), win(2, ms(300))},
			want: Trend{First: ms(300), Last: ms(300), Worst: ms(300)},
		},
		{
			// 100 ms more per 10 s window: 600 ms per minute, 400 ms from the first midpoint (5 s)
			// to the last (45 s).
			name: "growing",
			ws:   []Window{win(0, ms(100)), win(1, ms(200)), win(2, ms(300)), win(3, ms(400)), win(4, ms(500))},
			want: Trend{First: ms(100), Last: ms(500), Worst: ms(500), SlopePerMinute: ms(600), Growth: ms(400)},
		},
		{
			// One slow window in the middle moves neither end: the fit is flat.
			name: "one spike",
			ws:   []Window{win(0, ms(200)), win(1, ms(200)), win(2, ms(900)), win(3, ms(200)), win(4, ms(200))},
			want: Trend{First: ms(200), Last: ms(200), Worst: ms(900)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TrendOf(tt.ws); got != tt.want {
				t.Errorf("TrendOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

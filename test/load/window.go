package load

import (
	"math"
	"time"
)

// Update is one write of a full-speed phase: when it was sent and when statusfold reflected it
// (zero: not reflected).
type Update struct {
	Sent, Reflected time.Time
}

// Window is one window of a full-speed phase (docs/performance.md, "Staleness").
type Window struct {
	// Start and End are offsets from the phase's start.
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// Reflected is the number of updates reflected during the window; Outstanding the number
	// sent before its end and not reflected by then.
	Reflected   int `json:"reflected"`
	Outstanding int `json:"outstanding"`
	// Staleness summarises the window's samples: the write→reflection time of every update
	// reflected during the window, and the age at the window's end of every update outstanding
	// then.
	Staleness Latency `json:"staleness"`
}

// StalenessWindows cuts the time from start into n windows of the given length and summarises
// each window's staleness samples. An update reflected during window k counts, in window k, as
// the time from its write to its reflection; an update written before the end of window k and
// not reflected by then counts, in window k, as its age at that end — so an update that stays
// unreflected counts in every window it stays so, with a growing age, and statusfold falling
// behind shows as a growing p99 even when the backlog never clears.
func StalenessWindows(updates []Update, start time.Time, window time.Duration, n int) []Window {
	out := make([]Window, n)
	for k := range out {
		b, e := start.Add(time.Duration(k)*window), start.Add(time.Duration(k+1)*window)
		var samples []time.Duration
		w := Window{Start: time.Duration(k) * window, End: time.Duration(k+1) * window}
		for _, u := range updates {
			switch {
			case !u.Reflected.IsZero() && !u.Reflected.Before(b) && u.Reflected.Before(e):
				samples = append(samples, u.Reflected.Sub(u.Sent))
				w.Reflected++
			case u.Sent.Before(e) && (u.Reflected.IsZero() || !u.Reflected.Before(e)):
				samples = append(samples, e.Sub(u.Sent))
				w.Outstanding++
			}
		}
		w.Staleness = Summarize(samples)
		out[k] = w
	}
	return out
}

// Trend is how the windows' p99 staleness moves over a phase.
type Trend struct {
	First time.Duration `json:"firstWindowP99"`
	Last  time.Duration `json:"lastWindowP99"`
	Worst time.Duration `json:"worstWindowP99"`
	// SlopePerMinute is the least-squares slope of the windows' p99 against their midpoints.
	SlopePerMinute time.Duration `json:"slopePerMinute"`
	// Growth is the rise of that line from the first window's midpoint to the last's.
	Growth time.Duration `json:"growth"`
}

// TrendOf fits a line through the windows' p99 staleness (least squares, against each window's
// midpoint). With fewer than two windows the slope is 0.
func TrendOf(ws []Window) Trend {
	if len(ws) == 0 {
		return Trend{}
	}
	t := Trend{First: ws[0].Staleness.P99, Last: ws[len(ws)-1].Staleness.P99}
	var sx, sy float64
	for _, w := range ws {
		t.Worst = max(t.Worst, w.Staleness.P99)
		sx += mid(w).Minutes()
		sy += float64(w.Staleness.P99)
	}
	if len(ws) < 2 {
		return t
	}
	mx, my := sx/float64(len(ws)), sy/float64(len(ws))
	var sxy, sxx float64
	for _, w := range ws {
		dx := mid(w).Minutes() - mx
		sxy += dx * (float64(w.Staleness.P99) - my)
		sxx += dx * dx
	}
	slope := sxy / sxx // nanoseconds of p99 per minute
	t.SlopePerMinute = time.Duration(math.Round(slope))
	t.Growth = time.Duration(math.Round(slope * (mid(ws[len(ws)-1]) - mid(ws[0])).Minutes()))
	return t
}

func mid(w Window) time.Duration { return (w.Start + w.End) / 2 }

package pacing

import (
	"math"
	"slices"
	"time"
)

// PacerState is a Pacer's state, for metrics and logs.
type PacerState struct {
	Delay time.Duration // D
	// Floor and LatencyEWMA are those of the kind of write whose ratio is the highest.
	Floor       time.Duration
	LatencyEWMA time.Duration
	Overload    float64
	Depth       float64 // queue depth averaged over Smoothing
	Load        string  // high, steady or idle
}

// State returns the Pacer's state at now. It only reads: D is what advancing to now would
// make it, without recording that advance, so that reading the state (a metrics scrape, a log
// line) never changes how D moves.
func (p *Pacer[K]) State(now time.Time) PacerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	delay, _ := p.delayAt(now)
	_, kind := p.ratio(now)
	ls := &p.latencies[kind]
	floor := ls.floor(&p.o)
	return PacerState{Delay: delay, Floor: floor, LatencyEWMA: time.Duration(ls.latency(now, floor, &p.o) * float64(time.Second)),
		Overload: relax(p.overload, 0, now.Sub(p.overAt), p.o.Smoothing), Depth: p.depthAverage(now), Load: p.load(now).String()}
}

// ratio is the highest latency EWMA / floor over the kinds of write at now, and its kind.
func (p *Pacer[K]) ratio(now time.Time) (float64, WriteKind) {
	best, kind := 0.0, WriteKind(0)
	for k := range p.latencies {
		ls := &p.latencies[k]
		floor := ls.floor(&p.o)
		if r := ls.latency(now, floor, &p.o) / floor.Seconds(); r > best {
			best, kind = r, WriteKind(k)
		}
	}
	return best, kind
}

// latencySignal is one kind of write's latency floor and EWMA.
type latencySignal struct {
	ewma     float64   // seconds; valid when observed is set
	observed time.Time // time of the last observation (zero: none yet)

	group               [floorGroup]time.Duration // the latencies of the group being filled
	grouped             int                       // how many of group are filled
	floorCur, floorPrev time.Duration             // least group median in the current and previous half-window (0: none)
	floorStart          time.Time                 // start of the current half-window
}

// floorGroup is how many consecutive latencies make one group, whose median is a candidate for
// the floor.
const floorGroup = 8

// observe feeds one successful write's latency into the floor and the EWMA.
func (ls *latencySignal) observe(l time.Duration, now time.Time, o *PacerOptions) {
	if ls.floorStart.IsZero() || now.Sub(ls.floorStart) >= o.FloorWindow/2 {
		ls.floorPrev, ls.floorCur, ls.floorStart = ls.floorCur, 0, now
	}
	ls.group[ls.grouped] = l
	if ls.grouped++; ls.grouped == floorGroup {
		slices.Sort(ls.group[:])
		if m := ls.group[floorGroup/2-1]; ls.floorCur == 0 || m < ls.floorCur {
			ls.floorCur = m
		}
		ls.grouped = 0
	}
	ls.ewma = ls.latency(now, ls.floor(o), o)
	ls.ewma += pacerWeight * (l.Seconds() - ls.ewma)
	ls.observed = now
}

// floor is the latency floor: the least group median over the two half-windows, at least
// FloorMin.
func (ls *latencySignal) floor(o *PacerOptions) time.Duration {
	f := ls.floorCur
	if ls.floorPrev > 0 && (f == 0 || ls.floorPrev < f) {
		f = ls.floorPrev
	}
	return max(f, o.FloorMin)
}

// latency is the EWMA at now, relaxed toward floor since the last observation.
func (ls *latencySignal) latency(now time.Time, floor time.Duration, o *PacerOptions) float64 {
	if ls.observed.IsZero() {
		return floor.Seconds()
	}
	return relax(ls.ewma, floor.Seconds(), now.Sub(ls.observed), o.Smoothing)
}

// relax moves v toward target by exp(−dt/tau).
func relax(v, target float64, dt, tau time.Duration) float64 {
	if dt <= 0 {
		return v
	}
	return target + (v-target)*math.Exp(-dt.Seconds()/tau.Seconds())
}

type pacerLoad uint8

const (
	loadSteady pacerLoad = iota
	loadHigh
	loadIdle
)

func (l pacerLoad) String() string {
	return [...]string{"steady", "high", "idle"}[l]
}

// load classifies the signals at now.
func (p *Pacer[K]) load(now time.Time) pacerLoad {
	ratio, _ := p.ratio(now)
	over := relax(p.overload, 0, now.Sub(p.overAt), p.o.Smoothing)
	depth := p.depthAverage(now)
	if p.depth == 0 {
		depth = 0 // the queue is empty now: whatever it held has been taken
	}
	switch {
	case ratio >= p.o.HighRatio || depth >= float64(p.o.DepthHigh) || over >= pacerOverloadHigh:
		return loadHigh
	case ratio <= p.o.LowRatio && depth <= float64(p.o.DepthLow) && over < pacerOverloadIdle:
		return loadIdle
	}
	return loadSteady
}

// advance moves D from the last call to now, under the load the signals show at now.
func (p *Pacer[K]) advance(now time.Time) {
	if d, ok := p.delayAt(now); ok {
		p.delay, p.advanced = d, now
	}
}

// delayAt is D advanced from the last call to now, under the load the signals show at now, and
// whether time has passed since the last call (or there was none: ok, with D unchanged). It
// changes nothing.
func (p *Pacer[K]) delayAt(now time.Time) (time.Duration, bool) {
	if p.advanced.IsZero() {
		return p.delay, true
	}
	dt := now.Sub(p.advanced)
	if dt <= 0 {
		return p.delay, false
	}
	switch p.load(now) {
	case loadHigh:
		grow := min(dt.Seconds()/p.o.GrowthDoubling.Seconds(), 1)
		d := float64(max(p.delay, p.o.MinDelay)) * math.Exp2(grow)
		return min(time.Duration(d), p.o.MaxDelay), true
	case loadIdle:
		d := time.Duration(float64(p.delay) * math.Exp2(-dt.Seconds()/p.o.DecayHalving.Seconds()))
		if d < p.o.MinDelay {
			d = 0
		}
		return d, true
	}
	return p.delay, true
}

package pacing

import (
	"sync"
	"time"
)

// Pacer decides, per key, how long the next evaluation and write of that key waits after its
// last write, so that writes per update fall as the update rate rises: when the apiserver has
// room every key is written at once, and when it is short of capacity each write carries more
// updates. It is the adaptive form of Kubernetes' EndpointSlice batching (a fixed per-Service
// batch period) and of aggregator.Options.CoalesceDelay (a fixed per-object one). It is pure logic: it
// never reads a clock itself (every method takes the time), holds no client, and is safe for
// concurrent use.
//
// # Inputs
//
//   - ObserveWrite: each write's kind (WriteKind), start and end and its outcome. A successful
//     write's latency feeds its kind's latency floor and latency EWMA; an overload outcome (429,
//     503, 504, a timeout; see OutcomeOf) feeds the overload rate; every outcome sets the key's
//     last write time (a failed write is an attempt the apiserver had to serve too).
//   - SetQueueDepth: the number of keys waiting for a worker (ready keys, not those waiting out
//     their delay).
//
// # Signals
//
//   - floor, per kind of write: the least median of 8 consecutive successful writes' latencies
//     over the last PacerOptions.FloorWindow (two half-windows, as BBR filters its minimum
//     RTT), never below FloorMin: what a write of that kind costs when nothing queues. The
//     least median, not the least latency, so that a few writes faster than usual do not make
//     the usual latency read as pressure; per kind, because the kinds cost the apiserver
//     differently (a CombinedStatus apply against a returned status), and one floor for both
//     reads the slower kind's ordinary latency as pressure.
//   - ratio = EWMA / floor, per kind. The EWMA takes each observation with weight 1/5 and,
//     between observations, relaxes toward the floor with time constant Smoothing, so it falls
//     when writes stop (few writes are made while keys wait) and one slow write does not make
//     pressure on its own.
//   - overload: an EWMA (same weight and time constant, relaxing toward 0) of overload
//     outcomes; one overload outcome makes it 0.2.
//   - depth: the queue depth averaged over time with time constant Smoothing, so that a burst
//     of events at one instant is not read as a backlog; 0 while the queue is empty, so that a
//     backlog the workers have worked off is not read as one while its average decays (after
//     the initial sync's 2,000 keys, that took 2.4 s, with D held at its cap).
//
// # Control law (the base delay D, the same for every key)
//
// The load is "high" when any kind's ratio ≥ HighRatio, or depth ≥ DepthHigh, or overload ≥
// 0.1; "idle" when every kind's ratio ≤ LowRatio, depth ≤ DepthLow and overload < 0.01;
// otherwise "steady". Whenever a
// method other than State is called, D is advanced over the time since the previous call (State
// only reads, so that a metrics scrape does not change D's course):
//
//   - high: D := max(D, MinDelay) · 2^(dt/GrowthDoubling), at most one doubling per call;
//   - idle: D := D · 2^(−dt/DecayHalving), and 0 once it is below MinDelay;
//   - steady: D is held.
//
// D never exceeds MaxDelay. The dead band between LowRatio and HighRatio (and between DepthLow
// and DepthHigh) is the hysteresis: under a steady load D settles where the write latency lies
// in the band instead of swinging between 0 and MaxDelay.
//
// # Output
//
// Delay(key, now) = max(0, lastWrite(key) + D − now): 0 for a key not written within D, so an
// isolated update is never delayed, and at most MaxDelay after a key's last write, whatever the
// load, so staleness stays bounded by MaxDelay plus the wait for a worker and one write's
// latency. Every key is paced by
// the same D from its own last write: a key updated often cannot take the write budget of a
// key updated rarely (which is written at once).
//
// A wait is made only when it is worth its latency: when it is expected to fold at least
// MinFold (0.5) further updates into the key's write, by the key's own request rate λ (each
// Delay call is a request; λ is the inverse of an EWMA of the intervals between them), that is
// when λ · wait ≥ MinFold; otherwise Delay returns 0 and the key is written at once. A key
// updated every 2 s or less often gains little from waiting even at D's cap: at 10 % of the
// load test's plain maximum rate (≈0.55 updates per object per second) D at 1 s still left
// 0.96 CombinedStatus writes per update, and when the apiserver was short of CPU for tens of
// seconds (its garbage collection) D rose to its cap on the write latency and set L1's p99 at
// ≈1 s; keys updated often (full speed: ≈2.7 per second) keep their waits. A key with fewer
// than two requests seen has no rate yet and is not delayed.
//
// # Recovery
//
// With the defaults, from D = MaxDelay (1 s) and the latency EWMA at 20× the floor, once writes
// are back at the floor (or stop) and the queue is empty, D is back at 0 within 4 s: the EWMA
// needs up to Smoothing·ln(19/0.5) ≈ 1.8 s to fall below LowRatio (less when writes at the
// floor are observed), D then needs DecayHalving·log2(MaxDelay/MinDelay) ≈ 1.7 s
// (TestPacerRecovers pins this). Growth and decay are equally fast: an overloaded apiserver is
// relieved within ≈ 2 s, and light load after a burst (the initial sync, a rollout's storm of
// status updates) is written at once again within as long. A dip of the signals under a steady
// load does not undo what the load built up, because the dead band holds D, not because decay
// is slow: with decay 4× slower than growth (halving every second), updates
// after the initial sync of the load test waited up to 1 s for ≈8 s, the whole tail of its
// light-load phase, and the simulation (TestPacerSimulation) showed no load at which the slower
// decay wrote less or kept staleness lower.
type Pacer[K comparable] struct {
	o PacerOptions

	mu       sync.Mutex
	last     map[K]time.Time // key → end of its last write
	reqs     map[K]keyRequests
	delay    time.Duration // D
	advanced time.Time     // when D was last advanced

	latencies [WriteKinds]latencySignal
	overload  float64
	overAt    time.Time // time of the last overload-rate update

	depth    int       // last queue depth set
	depthAvg float64   // time-weighted average of depth up to depthAt
	depthAt  time.Time // when depth was last set
	sweeps   int
}

// PacerOptions configure a Pacer. Zero fields take the defaults below.
type PacerOptions struct {
	// MaxDelay caps D: no key waits longer than this after its last write. Default 1 s.
	MaxDelay time.Duration
	// MinDelay is the smallest non-zero D: growth starts from it, decay below it ends at 0.
	// Default 10 ms.
	MinDelay time.Duration
	// FloorMin is the smallest latency floor (so that a fast apiserver's jitter is not read as
	// pressure). Default 10 ms. FloorWindow is how long the floor remembers a latency. Default 5 min.
	FloorMin    time.Duration
	FloorWindow time.Duration
	// HighRatio and LowRatio bound the dead band of latency EWMA / floor. Defaults 3 and 1.5.
	HighRatio, LowRatio float64
	// DepthHigh and DepthLow bound the dead band of the queue depth. Defaults 16 and 4; the
	// manager sets 4 and 1 per worker (32 and 8 at its default of 8 workers).
	DepthHigh, DepthLow int
	// Smoothing is the time constant with which the latency EWMA and the overload rate relax
	// when no write is observed. Default 500 ms.
	Smoothing time.Duration
	// GrowthDoubling is the time in which D doubles under high load (default 250 ms);
	// DecayHalving the time in which it halves when idle (default 250 ms; see "Recovery").
	GrowthDoubling, DecayHalving time.Duration
	// MinFold is the least number of updates a key's wait is expected to fold into its next
	// write for the key to wait at all (see "Output"). Default 0.5; negative: every key waits
	// out D.
	MinFold float64
}

// Defaults of PacerOptions.
const (
	DefaultPacerMaxDelay = time.Second
	defaultPacerMinDelay = 10 * time.Millisecond
	defaultPacerFloorMin = 10 * time.Millisecond
	defaultPacerFloorWin = 5 * time.Minute
	defaultPacerHigh     = 3.0
	defaultPacerLow      = 1.5
	defaultPacerDepthHi  = 16
	defaultPacerDepthLo  = 4
	defaultPacerSmooth   = 500 * time.Millisecond
	defaultPacerGrowth   = 250 * time.Millisecond
	defaultPacerDecay    = 250 * time.Millisecond
	defaultPacerMinFold  = 0.5

	// requestGapMin: requests for one key closer together than this are one request (the
	// events of one change); requestGapMax caps one gap in the per-key interval average.
	requestGapMin = time.Millisecond
	requestGapMax = 10 * time.Second

	pacerWeight       = 0.2  // weight of one observation in the EWMAs
	pacerOverloadHigh = 0.1  // overload rate that makes the load high
	pacerOverloadIdle = 0.01 // overload rate below which the load can be idle
)

func (o *PacerOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.MaxDelay, DefaultPacerMaxDelay)
	def(&o.MinDelay, defaultPacerMinDelay)
	def(&o.FloorMin, defaultPacerFloorMin)
	def(&o.FloorWindow, defaultPacerFloorWin)
	def(&o.Smoothing, defaultPacerSmooth)
	def(&o.GrowthDoubling, defaultPacerGrowth)
	def(&o.DecayHalving, defaultPacerDecay)
	if o.MinDelay > o.MaxDelay {
		o.MinDelay = o.MaxDelay
	}
	if o.HighRatio <= 1 {
		o.HighRatio = defaultPacerHigh
	}
	if o.LowRatio <= 0 || o.LowRatio > o.HighRatio {
		o.LowRatio = min(defaultPacerLow, o.HighRatio)
	}
	if o.MinFold == 0 {
		o.MinFold = defaultPacerMinFold
	}
	if o.DepthHigh <= 0 {
		o.DepthHigh = defaultPacerDepthHi
	}
	if o.DepthLow <= 0 || o.DepthLow > o.DepthHigh {
		o.DepthLow = min(defaultPacerDepthLo, o.DepthHigh)
	}
}

// NewPacer returns a Pacer with D = 0.
func NewPacer[K comparable](o PacerOptions) *Pacer[K] {
	o.defaults()
	return &Pacer[K]{o: o, last: map[K]time.Time{}, reqs: map[K]keyRequests{}}
}

// ObserveWrite records a write of kind for key that started at start and ended at end.
func (p *Pacer[K]) ObserveWrite(key K, kind WriteKind, start, end time.Time, outcome WriteOutcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(end)
	if prev, ok := p.last[key]; !ok || end.After(prev) {
		p.last[key] = end
	}
	over := 0.0
	switch outcome {
	case WriteSucceeded:
		if kind < WriteKinds {
			p.latencies[kind].observe(max(end.Sub(start), 0), end, &p.o)
		}
	case WriteOverloaded:
		over = 1
	case WriteFailed:
		return
	}
	p.overload = relax(p.overload, 0, end.Sub(p.overAt), p.o.Smoothing)
	p.overload += pacerWeight * (over - p.overload)
	p.overAt = end
	// A map swept every 4096 calls, not k8s.io/apimachinery's cache.Expiring: its Set keeps a heap
	// entry per call (≈770 ns and 3 allocations against ≈120 ns and none here, on every write),
	// and an entry kept past its time changes nothing (the wait it could cause is over).
	if p.sweeps++; p.sweeps >= 4096 {
		p.sweeps = 0
		for k, t := range p.last {
			if end.Sub(t) > p.o.MaxDelay {
				delete(p.last, k)
			}
		}
		for k, r := range p.reqs {
			if end.Sub(r.at) > requestGapMax {
				delete(p.reqs, k)
			}
		}
	}
}

// SetQueueDepth records how many keys wait for a worker.
func (p *Pacer[K]) SetQueueDepth(depth int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(now)
	p.depthAvg = p.depthAverage(now)
	p.depth, p.depthAt = depth, now
}

// depthAverage is the queue depth averaged over time with time constant Smoothing, at now.
func (p *Pacer[K]) depthAverage(now time.Time) float64 {
	if p.depthAt.IsZero() {
		return 0
	}
	return relax(p.depthAvg, float64(p.depth), now.Sub(p.depthAt), p.o.Smoothing)
}

// Delay returns how long key should wait from now before its next evaluation: 0, or what is
// left of D since the key's last write (never more than MaxDelay).
//
// Each call is taken as a request for key (an update to fold into its next write): calls feed
// the key's request rate (keyRequests), and a wait that is expected to fold fewer than MinFold
// further updates is not made (0 is returned).
func (p *Pacer[K]) Delay(key K, now time.Time) time.Duration {
	return p.DelayFor(key, now, false)
}

// DelayFor is Delay for a key that already waits for its next evaluation (waiting: a wait
// Delay returned earlier has not ended) or not. A waiting key is not judged by MinFold: its
// evaluation is set for the end of that wait, so an update that joins it costs no wait of its
// own, and one evaluated at once — because what is left of the wait would fold too few updates —
// is evaluated a second time when the wait ends (at the load test's full speed, 1.14 evaluations
// per object per second with D at 1.5 s instead of at most 1/D).
func (p *Pacer[K]) DelayFor(key K, now time.Time, waiting bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(now)
	rate := p.request(key, now)
	last, ok := p.last[key]
	if !ok || p.delay == 0 {
		return 0
	}
	wait := min(max(last.Add(p.delay).Sub(now), 0), p.o.MaxDelay)
	if !waiting && p.o.MinFold > 0 && rate*wait.Seconds() < p.o.MinFold {
		return 0
	}
	return wait
}

// keyRequests is one key's request rate: the time of its last request and the average interval
// between its requests (an EWMA with weight pacerWeight; 0: fewer than two requests seen).
type keyRequests struct {
	at  time.Time
	ivl time.Duration
}

// request records a request for key at now and returns the key's request rate per second (0:
// not known yet).
func (p *Pacer[K]) request(key K, now time.Time) float64 {
	r, seen := p.reqs[key]
	switch gap := now.Sub(r.at); {
	case !seen:
		r.at = now
	case gap >= requestGapMin:
		gap = min(gap, requestGapMax)
		if r.ivl == 0 {
			r.ivl = gap
		} else {
			r.ivl += time.Duration(pacerWeight * float64(gap-r.ivl))
		}
		r.at = now
	}
	p.reqs[key] = r
	if r.ivl <= 0 {
		return 0
	}
	return 1 / r.ivl.Seconds()
}

// Forget drops key's last write time and request rate (its object is gone).
func (p *Pacer[K]) Forget(key K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.reqs, key)
}

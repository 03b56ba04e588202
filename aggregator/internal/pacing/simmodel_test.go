package pacing

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// A discrete-event model of statusfold in front of an apiserver with finite CPU, to compare
// pacing policies before a real run (docs/performance.md "Where the time goes" gives the costs):
//
//   - the apiserver: `cores` servers taking requests first come, first served; a plain update
//     (a WorkStatus status write) costs plainCost of CPU, a CombinedStatus write csCost;
//   - updates: open loop (Poisson, `rate` per second) or closed loop (`writers` clients writing
//     as fast as the apiserver answers, as the load test's full-speed phase does), each to one of
//     `keys` objects chosen uniformly; an update is seen by the manager when its write completes;
//   - the manager: the work queue's semantics (a key waiting is queued once; a key updated while
//     it is processed is processed once more afterwards), `workers` workers, evaluation cost 0
//     (the manager's CPU is not the bottleneck); a key becomes ready after policy.Delay;
//   - an update is reflected by the first CombinedStatus write of its key that started after it;
//     its staleness is the time from its write's completion to that write's completion;
//   - as the manager does at start, every key is evaluated and written once first (an initial
//     sync on an apiserver that is otherwise idle, as in the load test); updates start at
//     simSyncTime and last cfg.duration. Writes are counted from then on.
type simConfig struct {
	keys, cores, workers int
	plainCost, csCost    time.Duration
	rate                 float64 // open-loop updates per second; 0: closed loop
	writers              int
	duration             time.Duration
	seed                 uint64
	// busy: from busyFrom, for busyFor, busyCores of the apiserver's cores serve something else
	// (as its garbage collector does for seconds at a time at the default size: docs/performance.md,
	// "Fourth look at L1").
	busyFrom, busyFor time.Duration
	busyCores         int
}

// simPolicy is what the model asks of a pacing policy (Pacer, or a fixed delay).
type simPolicy interface {
	Delay(key int, now time.Time) time.Duration
	ObserveWrite(key int, kind WriteKind, start, end time.Time, o WriteOutcome)
	SetQueueDepth(n int, now time.Time)
}

// fixedDelay waits a fixed time after each key's last write (aggregator.Options.CoalesceDelay's rule).
type fixedDelay struct {
	d    time.Duration
	last map[int]time.Time
}

func (f *fixedDelay) Delay(k int, now time.Time) time.Duration {
	if l, ok := f.last[k]; ok {
		return max(l.Add(f.d).Sub(now), 0)
	}
	return 0
}
func (f *fixedDelay) ObserveWrite(k int, _ WriteKind, _, end time.Time, _ WriteOutcome) {
	f.last[k] = end
}
func (f *fixedDelay) SetQueueDepth(int, time.Time) {}

type simEvent struct {
	at  time.Duration
	seq int
	f   func()
}

type simEvents []simEvent

func (e simEvents) Len() int { return len(e) }
func (e simEvents) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e simEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *simEvents) Push(x any)   { *e = append(*e, x.(simEvent)) }
func (e *simEvents) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type simResult struct {
	updates, writes int
	rate            float64         // updates per second achieved
	stale           []time.Duration // per update, in update order
	windows         []time.Duration // p99 staleness per 10 s window of update time
	busy            float64         // apiserver utilisation
	maxDelay        time.Duration   // largest delay the policy returned
}

func (r simResult) writesPerUpdate() float64 { return float64(r.writes) / float64(r.updates) }

func (r simResult) p(q float64) time.Duration { return quantile(r.stale, q) }

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// simSyncTime is when updates start, after the initial sync.
const simSyncTime = 2 * time.Second

type simKey struct {
	pending    []int // updates not yet taken by an evaluation
	processing bool
	waiting    bool // in the ready queue or waiting out its delay
	dirty      bool // updated while processing
}

// simRun is one run of the model: the event queue, the apiserver's servers, the manager's
// queue and workers, and what is measured.
type simRun struct {
	cfg      simConfig
	pol      simPolicy
	rng      *rand.Rand
	now      time.Duration
	events   simEvents
	seq      int
	keys     []simKey
	ready    []int
	idle     int
	servers  int
	apiQueue []func() // requests waiting for a server; each starts its service
	busy     time.Duration
	updAt    []time.Duration // completion time of each update
	updKey   []int
	stale    []time.Duration
	end      time.Duration
	res      simResult
}

// at runs f after d.
func (s *simRun) at(d time.Duration, f func()) {
	s.seq++
	heap.Push(&s.events, simEvent{at: s.now + d, seq: s.seq, f: f})
}

func (s *simRun) wall() time.Time { return pacerT0.Add(s.now) }

func (s *simRun) startNext() {
	for s.servers > 0 && len(s.apiQueue) > 0 {
		s.servers--
		next := s.apiQueue[0]
		s.apiQueue = s.apiQueue[1:]
		next()
	}
}

// request queues a request of the given cost; done runs when it completes.
func (s *simRun) request(cost time.Duration, done func()) {
	s.apiQueue = append(s.apiQueue, func() {
		s.busy += cost
		s.at(cost, func() { s.servers++; done(); s.startNext() })
	})
	s.startNext()
}

func (s *simRun) makeReady(k int) {
	s.ready = append(s.ready, k)
	s.pol.SetQueueDepth(len(s.ready), s.wall())
	s.dispatch()
}

func (s *simRun) enqueue(k int) {
	ks := &s.keys[k]
	d := s.pol.Delay(k, s.wall()) // asked at every update, as the objects queue's Add does
	if ks.processing {
		ks.dirty = true
		return
	}
	if ks.waiting {
		return
	}
	ks.waiting = true
	s.res.maxDelay = max(s.res.maxDelay, d)
	if d == 0 {
		s.makeReady(k)
		return
	}
	s.at(d, func() { s.makeReady(k) })
}

func (s *simRun) dispatch() {
	for s.idle > 0 && len(s.ready) > 0 {
		k := s.ready[0]
		s.ready = s.ready[1:]
		s.pol.SetQueueDepth(len(s.ready), s.wall())
		ks := &s.keys[k]
		ks.waiting, ks.processing = false, true
		batch := ks.pending
		ks.pending = nil
		s.idle--
		start := s.wall()
		if s.now >= simSyncTime {
			s.res.writes++
		}
		s.request(s.cfg.csCost, func() {
			s.pol.ObserveWrite(k, WriteCombinedStatus, start, s.wall(), WriteSucceeded)
			for _, u := range batch {
				s.stale[u] = s.now - s.updAt[u]
			}
			ks.processing = false
			s.idle++
			if ks.dirty || len(ks.pending) > 0 {
				ks.dirty = false
				s.enqueue(k)
			}
			s.dispatch()
		})
	}
}

func (s *simRun) updated(k int) {
	s.updAt = append(s.updAt, s.now)
	s.updKey = append(s.updKey, k)
	s.stale = append(s.stale, -1)
	s.keys[k].pending = append(s.keys[k].pending, len(s.updAt)-1)
	s.enqueue(k)
}

func (s *simRun) write() {
	if s.now >= s.end {
		return
	}
	k := s.rng.IntN(s.cfg.keys)
	s.request(s.cfg.plainCost, func() {
		s.updated(k)
		if s.cfg.rate == 0 {
			s.write()
		}
	})
}

// arrive is one open-loop update, and the next one's arrival.
func (s *simRun) arrive() {
	if s.now >= s.end {
		return
	}
	s.write()
	s.at(time.Duration(s.rng.ExpFloat64()/s.cfg.rate*float64(time.Second)), s.arrive)
}

// simulate runs the model; updates stop at cfg.duration, and the run ends when all are reflected.
func simulate(cfg simConfig, pol simPolicy) simResult {
	s := &simRun{cfg: cfg, pol: pol, rng: rand.New(rand.NewPCG(cfg.seed, 1)), keys: make([]simKey, cfg.keys),
		idle: cfg.workers, servers: cfg.cores, end: simSyncTime + cfg.duration}
	for k := range s.keys {
		s.enqueue(k) // the initial sync
	}
	if cfg.busyFor > 0 {
		s.at(cfg.busyFrom, func() { s.servers -= cfg.busyCores })
		s.at(cfg.busyFrom+cfg.busyFor, func() { s.servers += cfg.busyCores; s.startNext() })
	}
	if cfg.rate > 0 {
		s.at(simSyncTime, s.arrive)
	} else {
		s.at(simSyncTime, func() {
			for range cfg.writers {
				s.write()
			}
		})
	}
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.at
		e.f()
	}
	return s.result()
}

// result is what the run measured, once every event has run.
func (s *simRun) result() simResult {
	res := s.res
	res.updates = len(s.updAt)
	res.rate = float64(res.updates) / s.cfg.duration.Seconds()
	res.stale = s.stale
	res.busy = s.busy.Seconds() / (float64(s.cfg.cores) * s.now.Seconds())
	for w := simSyncTime; w < s.end; w += 10 * time.Second {
		var in []time.Duration
		for i, t := range s.updAt {
			if t >= w && t < w+10*time.Second {
				in = append(in, s.stale[i])
			}
		}
		res.windows = append(res.windows, quantile(in, 0.99))
	}
	for _, st := range s.stale {
		if st < 0 {
			panic("an update was never reflected")
		}
	}
	return res
}

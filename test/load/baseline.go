package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BaselineConfig sizes the apiserver-alone measurement. It writes the fixture's own WorkStatuses
// — the objects, namespaces, status shape and writers that statusfold's phases write — before
// the manager starts, so that nothing but the apiserver and etcd handles the writes.
type BaselineConfig struct {
	// IdleFor is how long the apiserver's CPU time is measured with nothing writing.
	IdleFor time.Duration
	// MaxRateFor is how long the fixture's writers write as fast as they can.
	MaxRateFor time.Duration
	// L1Writes writes are paced at L1Rate per second; an L1Rate of 0 means L1Fraction of the
	// measured maximum rate.
	L1Writes   int
	L1Rate     float64
	L1Fraction float64
	// ListPageSize is the page size of the list of every WorkStatus.
	ListPageSize int
	// APIServerPID is the kube-apiserver's process, for its CPU time; 0: not measured.
	APIServerPID int
	Seed         uint64
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
}

// BaselineResult is what the apiserver alone achieves with the fixture's WorkStatuses.
type BaselineResult struct {
	// Writers is the number of concurrent writers (the same in statusfold's full-speed phase).
	Writers int `json:"writers"`
	// IdleCPUPerSec is the apiserver's CPU seconds per second with nothing writing (the
	// fixture populated, only the baseline's watch open); 0: not measured.
	IdleCPUPerSec float64 `json:"apiserverIdleCPUPerSec"`
	// MaxRate is the writers writing as fast as they can: L2's baseline.
	MaxRate MaxRatePhase `json:"maxRate"`
	// L1 is writes paced at a fraction of the maximum rate: L1's baseline.
	L1 PacedPhase `json:"l1"`
	// List is a plain client listing every WorkStatus: L3's baseline.
	List ListPhase `json:"listAll"`
}

// MaxRatePhase is writes as fast as the writers can.
type MaxRatePhase struct {
	Duration   time.Duration `json:"duration"`
	Writes     int           `json:"writes"`
	RatePerSec float64       `json:"ratePerSec"`
	// RTT is the request round trip of the writes.
	RTT Latency `json:"writeRTT"`
	// WriteToWatch is write→watch-event latency.
	WriteToWatch Latency `json:"writeToWatch"`
	// Drain is the time from the writers' stop until the watch delivered every write.
	Drain time.Duration `json:"drain"`
	// APIServerCPUPerWrite is the apiserver's CPU time per write, from the first write until
	// the watch delivered the last; 0: not measured.
	APIServerCPUPerWrite time.Duration `json:"apiserverCPUPerWrite"`
}

// PacedPhase is writes at a set rate.
type PacedPhase struct {
	RatePerSec float64 `json:"ratePerSec"`
	Writes     int     `json:"writes"`
	// WriteToWatch is write→watch-event latency.
	WriteToWatch Latency `json:"writeToWatch"`
	// APIServerCPUPerWrite is the apiserver's CPU time per write; 0: not measured.
	APIServerCPUPerWrite time.Duration `json:"apiserverCPUPerWrite"`
}

// ListPhase is a paged list of every WorkStatus by a plain client.
type ListPhase struct {
	Objects  int           `json:"objects"`
	PageSize int           `json:"pageSize"`
	Took     time.Duration `json:"took"`
	// BytesPerObject is the mean size of a WorkStatus's JSON as served.
	BytesPerObject float64 `json:"bytesPerObject"`
}

// RunBaseline measures the apiserver alone, writing the populated fixture's WorkStatuses. It
// must run before the manager starts.
func RunBaseline(ctx context.Context, f *Fixture, cfg *rest.Config, bc BaselineConfig) (*BaselineResult, error) {
	logf := bc.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ws := f.dyn.Resource(WorkStatusGVR)
	res := &BaselineResult{Writers: f.writer.workers}
	b := &baselineRun{f: f, bc: bc, pick: newPicker(f, bc.Seed), obs: newObserver(f.writer), logf: logf}

	list, err := ws.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone := make(chan error, 1)
	go func() { watchDone <- b.obs.watch(watchCtx, ws, list.GetResourceVersion()) }()

	// Idle: what the apiserver spends with nothing to do, which a per-write CPU figure
	// includes, spread over the writes.
	cpu := startCPU(bc.APIServerPID)
	select {
	case <-time.After(bc.IdleFor):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if bc.IdleFor > 0 {
		res.IdleCPUPerSec = cpu.per(1).Seconds() / bc.IdleFor.Seconds()
	}
	logf("baseline: apiserver idle CPU %.3f s per s", res.IdleCPUPerSec)

	if err := b.maxRate(ctx, &res.MaxRate); err != nil {
		return nil, err
	}
	if err := b.paced(ctx, &res.L1, res.MaxRate.RatePerSec); err != nil {
		return nil, err
	}
	stopWatch()
	if err := <-watchDone; err != nil && ctx.Err() == nil {
		return nil, err
	}

	res.List, err = listAll(ctx, cfg, bc.ListPageSize)
	if err != nil {
		return nil, fmt.Errorf("listing every WorkStatus: %w", err)
	}
	logf("baseline: listing %d WorkStatuses (%d per page) took %s; %.0f bytes of JSON each",
		res.List.Objects, res.List.PageSize, res.List.Took.Round(time.Millisecond), res.List.BytesPerObject)
	return res, nil
}

// baselineRun is what RunBaseline's phases share: the fixture and its writers, the pick of the
// next update, and the observer of the WorkStatus watch.
type baselineRun struct {
	f    *Fixture
	bc   BaselineConfig
	pick func() (int, int, int64)
	obs  *observer
	logf func(string, ...any)
}

// maxRate has every writer write as fast as it can for bc.MaxRateFor, and fills mr.
func (b *baselineRun) maxRate(ctx context.Context, mr *MaxRatePhase) error {
	w := b.f.writer
	first := w.next.Load() + 1
	var rtts []time.Duration
	var mu sync.Mutex
	cpu := startCPU(b.bc.APIServerPID)
	start := time.Now()
	err := w.until(ctx, start.Add(b.bc.MaxRateFor), func(ctx context.Context) error {
		i, j, ready := b.pick()
		t0 := time.Now()
		if _, _, err := b.f.Write(ctx, i, j, ready); err != nil {
			return err
		}
		mu.Lock()
		rtts = append(rtts, time.Since(t0))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return fmt.Errorf("max rate: %w", err)
	}
	stopped := time.Now()
	last := w.next.Load()
	mr.Duration = stopped.Sub(start)
	mr.Writes = len(rtts)
	mr.RatePerSec = float64(len(rtts)) / mr.Duration.Seconds()
	mr.RTT = Summarize(rtts)
	mr.WriteToWatch = b.obs.await(ctx, first, last, 30*time.Second)
	mr.Drain = max(b.obs.lastSeen(first, last).Sub(stopped), 0)
	mr.APIServerCPUPerWrite = cpu.per(mr.Writes)
	b.logf("baseline: max write rate %.0f/s with %d writers; RTT %s; write→watch %s; drain %s; apiserver CPU %s per write",
		mr.RatePerSec, w.workers, mr.RTT, mr.WriteToWatch, mr.Drain, mr.APIServerCPUPerWrite)
	return nil
}

// paced writes bc.L1Writes at a paced rate well below saturation (bc.L1Rate, else bc.L1Fraction
// of maxRate), and fills l1.
func (b *baselineRun) paced(ctx context.Context, l1 *PacedPhase, maxRate float64) error {
	w := b.f.writer
	l1.RatePerSec = b.bc.L1Rate
	if l1.RatePerSec <= 0 {
		l1.RatePerSec = b.bc.L1Fraction * maxRate
	}
	l1.Writes = b.bc.L1Writes
	first := w.next.Load() + 1
	cpu := startCPU(b.bc.APIServerPID)
	err := w.paced(ctx, l1.Writes, l1.RatePerSec, func(ctx context.Context, _ int) error {
		i, j, ready := b.pick()
		_, _, err := b.f.Write(ctx, i, j, ready)
		return err
	})
	if err != nil {
		return fmt.Errorf("paced writes: %w", err)
	}
	l1.WriteToWatch = b.obs.await(ctx, first, w.next.Load(), 30*time.Second)
	l1.APIServerCPUPerWrite = cpu.per(l1.Writes)
	b.logf("baseline: at %.0f writes/s, write→watch %s; apiserver CPU %s per write", l1.RatePerSec, l1.WriteToWatch, l1.APIServerCPUPerWrite)
	return nil
}

// listAll lists every WorkStatus in pages, as raw JSON, and times it.
func listAll(ctx context.Context, cfg *rest.Config, pageSize int) (ListPhase, error) {
	lp := ListPhase{PageSize: pageSize}
	cs, err := kubernetes.NewForConfig(unthrottled(cfg))
	if err != nil {
		return lp, err
	}
	path := "/apis/" + WorkStatusGVR.Group + "/" + WorkStatusGVR.Version + "/" + WorkStatusGVR.Resource
	var bytes int
	start := time.Now()
	for cont := ""; ; {
		b, err := cs.CoreV1().RESTClient().Get().AbsPath(path).
			Param("limit", strconv.Itoa(pageSize)).Param("continue", cont).DoRaw(ctx)
		if err != nil {
			return lp, err
		}
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return lp, err
		}
		for _, it := range page.Items {
			bytes += len(it)
		}
		lp.Objects += len(page.Items)
		if cont = page.Metadata.Continue; cont == "" {
			break
		}
	}
	lp.Took = time.Since(start)
	if lp.Objects > 0 {
		lp.BytesPerObject = float64(bytes) / float64(lp.Objects)
	}
	return lp, nil
}

// observer records when the watch delivers each sequence number.
type observer struct {
	w    *seqWriter
	mu   sync.Mutex
	seen map[int64]time.Duration
	at   map[int64]time.Time
}

func newObserver(w *seqWriter) *observer {
	return &observer{w: w, seen: map[int64]time.Duration{}, at: map[int64]time.Time{}}
}

// watch follows the resource from rv until ctx ends, re-watching from the last seen version when
// the server closes the watch.
func (o *observer) watch(ctx context.Context, ri dynamic.NamespaceableResourceInterface, rv string) error {
	for ctx.Err() == nil {
		wi, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for ev := range wi.ResultChan() {
			now := time.Now()
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			if seq, ok := SeqOf(u.Object); ok {
				if sent, ok := o.w.sent.Load(seq); ok {
					o.mu.Lock()
					o.seen[seq] = now.Sub(sent.(time.Time))
					o.at[seq] = now
					o.mu.Unlock()
				}
			}
		}
		wi.Stop()
	}
	return nil
}

// await waits until every sequence number in [first, last] was seen (or the timeout passes) and
// summarises their latencies; an unseen number counts as the timeout.
func (o *observer) await(ctx context.Context, first, last int64, timeout time.Duration) Latency {
	deadline := time.Now().Add(timeout)
	for {
		o.mu.Lock()
		missing := 0
		for s := first; s <= last; s++ {
			if _, ok := o.seen[s]; !ok {
				missing++
			}
		}
		o.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var lat []time.Duration
	for s := first; s <= last; s++ {
		d, ok := o.seen[s]
		if !ok {
			d = timeout
		}
		lat = append(lat, d)
	}
	return Summarize(lat)
}

// lastSeen is when the watch delivered the last of the sequence numbers in [first, last]
// (zero when it delivered none).
func (o *observer) lastSeen(first, last int64) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var t time.Time
	for s := first; s <= last; s++ {
		if a := o.at[s]; a.After(t) {
			t = a
		}
	}
	return t
}

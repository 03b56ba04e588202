package load

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// BaselineConfig sizes the apiserver-alone measurement: a plain client writing WorkStatus objects
// of the same size and shape as the statusfold run, with nothing else running.
type BaselineConfig struct {
	// Namespaces × ObjectsPerNamespace WorkStatus objects are created and then written.
	Namespaces, ObjectsPerNamespace int
	// Workers is the number of concurrent writers.
	Workers int
	// MaxRateDuration is how long the writers write as fast as they can.
	MaxRateDuration time.Duration
	// LatencyWrites writes are issued at LatencyRate per second for the write→watch latency.
	LatencyWrites int
	// LatencyRate is the paced write rate; 0 means half the measured maximum rate.
	LatencyRate float64
	// APIServerPID is the kube-apiserver's process, for its CPU time; 0: not measured.
	APIServerPID int
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
}

// BaselineResult is what the apiserver alone achieves.
type BaselineResult struct {
	Objects int `json:"objects"`
	// CreateRate is creates (plus the first status write) per second while populating.
	CreateRate float64 `json:"createRatePerSec"`
	// MaxWriteRate is status writes per second with Workers writers writing as fast as they can.
	MaxWriteRate float64 `json:"maxWriteRatePerSec"`
	// WriteRTT is the request round trip of those writes.
	WriteRTT Latency `json:"writeRTT"`
	// WatchAtMaxRate is write→watch-event latency while writing at the maximum rate.
	WatchAtMaxRate Latency `json:"writeToWatchAtMaxRate"`
	// LatencyRate is the paced rate of the latency phase, writes per second.
	LatencyRate float64 `json:"latencyRatePerSec"`
	// WriteToWatch is write→watch-event latency at LatencyRate.
	WriteToWatch Latency `json:"writeToWatch"`
	// APIServerCPUPerWrite is the apiserver's CPU time per write at LatencyRate; 0: not measured.
	APIServerCPUPerWrite time.Duration `json:"apiserverCPUPerWrite"`
}

// BaselineNamespace is the i-th namespace of the baseline's WorkStatus objects.
func BaselineNamespace(i int) string { return fmt.Sprintf("baseline-%03d", i) }

// BaselineWDSName labels the baseline's WorkStatus objects, so that no statusfold WDS claims them.
const BaselineWDSName = "load-baseline"

// target is one WorkStatus: its namespace (the WEC), the workload object it reports on, and its
// own name.
type target struct {
	namespace, object, name string
	idx                     int // the object's index
}

// RunBaseline measures the apiserver alone and deletes the objects it created.
func RunBaseline(ctx context.Context, cfg *rest.Config, bc BaselineConfig) (*BaselineResult, error) {
	logf := bc.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	if err != nil {
		return nil, err
	}
	ws := dyn.Resource(WorkStatusGVR)
	var targets []target
	for i := range bc.Namespaces {
		ns := BaselineNamespace(i)
		if _, err := dyn.Resource(namespaceGVR).Create(ctx, namespaceObject(ns), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		for j := range bc.ObjectsPerNamespace {
			targets = append(targets, target{ns, ObjectName(j), WorkStatus(BaselineWDSName, ns, "load", ObjectName(j)).GetName(), j})
		}
	}
	res := &BaselineResult{Objects: len(targets)}
	w := &seqWriter{ws: ws, workers: max(bc.Workers, 1)}

	// Populate: create each object, then write its first status, as the agent does.
	start := time.Now()
	err = w.parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		tg := targets[i]
		if _, err := ws.Namespace(tg.namespace).Create(ctx, WorkStatus(BaselineWDSName, tg.namespace, "load", tg.object), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err := w.write(ctx, tg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("populating: %w", err)
	}
	res.CreateRate = float64(len(targets)) / time.Since(start).Seconds()
	logf("baseline: %d WorkStatus objects created at %.0f/s", len(targets), res.CreateRate)

	list, err := ws.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	obs := newObserver(w)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone := make(chan error, 1)
	go func() { watchDone <- obs.watch(watchCtx, ws, list.GetResourceVersion()) }()

	// Maximum rate: every worker writes as fast as it can, round robin over the objects.
	first := w.next.Load() + 1
	var rtts []time.Duration
	var mu sync.Mutex
	deadline := time.Now().Add(bc.MaxRateDuration)
	var n atomic.Int64
	start = time.Now()
	err = w.until(ctx, deadline, func(ctx context.Context) error {
		tg := targets[int(n.Add(1))%len(targets)]
		t0 := time.Now()
		if _, err := w.write(ctx, tg); err != nil {
			return err
		}
		mu.Lock()
		rtts = append(rtts, time.Since(t0))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("max rate: %w", err)
	}
	last := w.next.Load()
	res.MaxWriteRate = float64(len(rtts)) / time.Since(start).Seconds()
	res.WriteRTT = Summarize(rtts)
	res.WatchAtMaxRate = obs.await(ctx, first, last, 30*time.Second)
	logf("baseline: max write rate %.0f/s with %d writers; RTT %s; write→watch %s", res.MaxWriteRate, w.workers, res.WriteRTT, res.WatchAtMaxRate)

	// Latency at a paced rate, below saturation.
	res.LatencyRate = bc.LatencyRate
	if res.LatencyRate <= 0 {
		res.LatencyRate = res.MaxWriteRate / 2
	}
	first = w.next.Load() + 1
	cpu := startCPU(bc.APIServerPID)
	err = w.paced(ctx, bc.LatencyWrites, res.LatencyRate, func(ctx context.Context, i int) error {
		_, err := w.write(ctx, targets[i%len(targets)])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("paced writes: %w", err)
	}
	res.WriteToWatch = obs.await(ctx, first, w.next.Load(), 30*time.Second)
	res.APIServerCPUPerWrite = cpu.per(bc.LatencyWrites)
	logf("baseline: at %.0f writes/s, write→watch %s; apiserver CPU %s per write", res.LatencyRate, res.WriteToWatch, res.APIServerCPUPerWrite)
	stopWatch()
	if err := <-watchDone; err != nil && ctx.Err() == nil {
		return nil, err
	}

	for i := range bc.Namespaces {
		if err := ws.Namespace(BaselineNamespace(i)).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return nil, fmt.Errorf("cleaning up: %w", err)
		}
	}
	return res, nil
}

// seqWriter writes Deployment-shaped statuses, each with a new sequence number, and remembers
// when each was sent.
type seqWriter struct {
	ws      dynamic.NamespaceableResourceInterface
	workers int
	next    atomic.Int64
	sent    sync.Map // seq -> time.Time
	// onSend, when set, is called just before each write is sent.
	onSend func(tg target, seq int64, sent time.Time)
}

func (w *seqWriter) write(ctx context.Context, tg target) (int64, error) {
	seq, _, err := w.writeReady(ctx, tg, 3)
	return seq, err
}

// writeReady writes a status with the given ready replicas (of 3) and returns its sequence number
// and when it was sent.
func (w *seqWriter) writeReady(ctx context.Context, tg target, ready int64) (int64, time.Time, error) {
	seq := w.next.Add(1)
	body, err := json.Marshal(map[string]any{"status": DeploymentStatus(tg.object, seq, 3, ready)})
	if err != nil {
		return 0, time.Time{}, err
	}
	sent := time.Now()
	w.sent.Store(seq, sent)
	if w.onSend != nil {
		w.onSend(tg, seq, sent)
	}
	_, err = w.ws.Namespace(tg.namespace).Patch(ctx, tg.name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return seq, sent, err
}

// parallel runs fn for 0..n-1 on w.workers goroutines and returns the first error.
func (w *seqWriter) parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	var next atomic.Int64
	return w.run(ctx, func(ctx context.Context) (bool, error) {
		i := int(next.Add(1)) - 1
		if i >= n {
			return false, nil
		}
		return true, fn(ctx, i)
	})
}

// until runs fn on w.workers goroutines until the deadline.
func (w *seqWriter) until(ctx context.Context, deadline time.Time, fn func(context.Context) error) error {
	return w.run(ctx, func(ctx context.Context) (bool, error) {
		if time.Now().After(deadline) {
			return false, nil
		}
		return true, fn(ctx)
	})
}

// paced runs fn for 0..n-1, call i starting no earlier than i/rate seconds after the start, on
// w.workers goroutines.
func (w *seqWriter) paced(ctx context.Context, n int, rate float64, fn func(context.Context, int) error) error {
	start := time.Now()
	return w.parallel(ctx, n, func(ctx context.Context, i int) error {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return fn(ctx, i)
	})
}

// run calls step on w.workers goroutines until a step returns false or an error.
func (w *seqWriter) run(ctx context.Context, step func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range w.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				more, err := step(ctx)
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				if !more {
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// observer records when the watch delivers each sequence number.
type observer struct {
	w    *seqWriter
	mu   sync.Mutex
	seen map[int64]time.Duration
}

func newObserver(w *seqWriter) *observer {
	return &observer{w: w, seen: map[int64]time.Duration{}}
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

// unthrottled copies cfg without client-side rate limiting: the test measures the server.
func unthrottled(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = -1
	c.Burst = 0
	c.RateLimiter = nil
	return c
}

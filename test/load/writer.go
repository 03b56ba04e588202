package load

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// newPicker returns a source of random updates of the fixture — a WEC, an object and a number
// of ready replicas — safe for concurrent use.
func newPicker(f *Fixture, seed uint64) func() (int, int, int64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var mu sync.Mutex
	return func() (int, int, int64) {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(f.WECs), rng.IntN(f.Objects), int64(rng.IntN(4))
	}
}

// target is one WorkStatus: its namespace (the WEC), the workload object it reports on, and its
// own name.
type target struct {
	namespace, object, name string
	idx                     int // the object's index
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

// unthrottled copies cfg without client-side rate limiting: the test measures the server.
func unthrottled(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = -1
	c.Burst = 0
	c.RateLimiter = nil
	return c
}

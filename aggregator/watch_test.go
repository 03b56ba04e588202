package aggregator

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncLaterCache hands out informers whose initial list completes after a per-kind delay (never,
// for a kind without one). Only GetInformer is implemented: it is all ensureWatches uses.
type syncLaterCache struct {
	cache.Cache
	delay map[string]time.Duration

	mu       sync.Mutex
	blocking []string // kinds asked for with BlockUntilSynced(true)
}

func (c *syncLaterCache) GetInformer(_ context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	o := cache.InformerGetOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if o.BlockUntilSynced == nil || *o.BlockUntilSynced {
		c.mu.Lock()
		c.blocking = append(c.blocking, kind)
		c.mu.Unlock()
	}
	reg := &syncLaterReg{name: kind, done: make(chan struct{})}
	if d, ok := c.delay[kind]; ok {
		time.AfterFunc(d, func() { close(reg.done) })
	}
	return &syncLaterInformer{reg: reg}, nil
}

type syncLaterInformer struct {
	cache.Informer
	reg *syncLaterReg
}

func (i *syncLaterInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.reg, nil
}

type syncLaterReg struct {
	name string
	done chan struct{}
}

func (r *syncLaterReg) HasSynced() bool                          { return toolscache.IsDone(r) }
func (r *syncLaterReg) HasSyncedChecker() toolscache.DoneChecker { return r }
func (r *syncLaterReg) Name() string                             { return r.name }
func (r *syncLaterReg) Done() <-chan struct{}                    { return r.done }

var _ toolscache.ResourceEventHandlerRegistration = (*syncLaterReg)(nil)

// A policy whose clauses select every resource needs dozens of watches: they must list in
// parallel, so the wait is about the slowest list, not the sum of all (issue 15, L3); a resource
// whose list never completes fails alone, after one WatchSyncTimeout.
func TestEnsureWatchesWaitsInParallel(t *testing.T) {
	const (
		n       = 40
		listFor = 50 * time.Millisecond // each informer's initial list
		timeout = 300 * time.Millisecond
	)
	c := &syncLaterCache{delay: map[string]time.Duration{}}
	var infos []resourceInfo
	for i := range n {
		kind := "Kind" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		c.delay[kind] = listFor
		infos = append(infos, resourceInfo{GVR: schema.GroupVersionResource{Group: "g", Version: "v1", Resource: strings.ToLower(kind) + "s"}, Kind: kind})
	}
	stuck := resourceInfo{GVR: schema.GroupVersionResource{Group: "down.example", Version: "v1", Resource: "stucks"}, Kind: "Stuck"}
	a := &Aggregator{opts: Options{WatchSyncTimeout: timeout}, log: logr.Discard(), wdsCache: c,
		watches: map[string]toolscache.ResourceEventHandlerRegistration{}}

	began := time.Now()
	errs := a.ensureWatches(context.Background(), infos)
	took := time.Since(began)
	if len(errs) != 0 {
		t.Fatalf("errors %v, want none", errs)
	}
	// Serially the waits would add up to n × listFor = 2 s; in parallel they take one listFor.
	if limit := n * listFor / 4; took > limit {
		t.Errorf("%d watches took %s to sync, want about %s (the slowest list), at most %s", n, took, listFor, limit)
	}
	for _, info := range infos {
		if !a.watching(info) {
			t.Errorf("%s not watched and synced after ensureWatches", info.GVR)
		}
	}
	if len(c.blocking) != 0 {
		t.Errorf("informers asked for with BlockUntilSynced: %v, want none (the wait is ensureWatches')", c.blocking)
	}

	// A second call finds every watch started and synced: no wait.
	began = time.Now()
	if errs := a.ensureWatches(context.Background(), infos); len(errs) != 0 || time.Since(began) > listFor {
		t.Errorf("second call: errors %v after %s, want none at once", errs, time.Since(began))
	}

	// One resource that never lists fails, named, after the timeout; the others are unaffected.
	more := append([]resourceInfo{stuck}, infos...)
	began = time.Now()
	errs = a.ensureWatches(context.Background(), more)
	took = time.Since(began)
	if len(errs) != 1 || errs[stuck.GVR.GroupResource()] == nil {
		t.Fatalf("errors %v, want exactly one, for %s", errs, stuck.GVR.GroupResource())
	}
	if msg := errs[stuck.GVR.GroupResource()].Error(); !strings.Contains(msg, "stucks") || !strings.Contains(msg, timeout.String()) {
		t.Errorf("error %q: want the resource and the timeout named", msg)
	}
	if took < timeout || took > 3*timeout {
		t.Errorf("a stuck watch failed after %s, want after the timeout %s", took, timeout)
	}
	if err := a.ensureWatch(context.Background(), infos[0]); err != nil {
		t.Errorf("ensureWatch of a synced resource: %v", err)
	}
}

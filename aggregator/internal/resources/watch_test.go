package resources

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

// syncLaterCache hands out informers whose initial lists complete only once `together` informers
// have been asked for (a barrier): a caller that waits for one list before starting the next
// informer never sees it complete. Kinds in `never` never list. Only GetInformer is implemented:
// it is all the watcher uses.
type syncLaterCache struct {
	cache.Cache
	together int
	never    map[string]bool

	mu       sync.Mutex
	started  []*syncLaterReg
	blocking []string // kinds asked for with BlockUntilSynced(true)
}

func (c *syncLaterCache) GetInformer(_ context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	o := cache.InformerGetOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	reg := &syncLaterReg{name: kind, done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.BlockUntilSynced == nil || *o.BlockUntilSynced {
		c.blocking = append(c.blocking, kind)
	}
	if !c.never[kind] {
		c.started = append(c.started, reg)
	}
	if len(c.started) >= c.together {
		for _, r := range c.started {
			if !toolscache.IsDone(r) {
				close(r.done)
			}
		}
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

// A policy whose clauses select every resource needs dozens of watches: every informer must be
// started before any is waited for, so their lists run together and the wait is about the
// slowest list, not the sum of all (docs/performance.md, L3). The fake cache completes no list until all
// n informers are started, so a watcher that waits for one before starting the next fails with
// timeouts. A resource whose list never completes fails alone, named.
func TestEnsureWatchesWaitsInParallel(t *testing.T) {
	const (
		n       = 40
		timeout = 2 * time.Second
	)
	stuck := ResourceInfo{GVR: schema.GroupVersionResource{Group: "down.example", Version: "v1", Resource: "stucks"}, Kind: "Stuck"}
	c := &syncLaterCache{together: n, never: map[string]bool{stuck.Kind: true}}
	var infos []ResourceInfo
	var wants []Want
	for i := range n {
		kind := "Kind" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		infos = append(infos, ResourceInfo{GVR: schema.GroupVersionResource{Group: "g", Version: "v1", Resource: strings.ToLower(kind) + "s"}, Kind: kind})
		wants = append(wants, Want{Info: infos[i], Scope: AllNamespaces()})
	}
	w := NewWatcher(c, timeout, func(ResourceInfo) toolscache.ResourceEventHandler { return nil }, logr.Discard())

	if errs := w.EnsureAll(context.Background(), wants); len(errs) != 0 {
		t.Fatalf("errors %v, want none (every informer started before any wait)", errs)
	}
	for _, info := range infos {
		if !w.Watching(info, "") {
			t.Errorf("%s not watched and synced after ensureAll", info.GVR)
		}
	}
	if len(c.blocking) != 0 {
		t.Errorf("informers asked for with BlockUntilSynced: %v, want none (the wait is ensureAll's)", c.blocking)
	}

	// A second call finds every watch started and synced: no new informer.
	if errs := w.EnsureAll(context.Background(), wants); len(errs) != 0 || len(c.started) != n {
		t.Errorf("second call: errors %v, %d informers, want none and %d", errs, len(c.started), n)
	}

	// One resource that never lists fails, named, after the timeout; the others are unaffected.
	began := time.Now()
	errs := w.EnsureAll(context.Background(), append([]Want{{Info: stuck, Scope: AllNamespaces()}}, wants...))
	if len(errs) != 1 || errs[stuck.GVR.GroupResource()] == nil {
		t.Fatalf("errors %v, want exactly one, for %s", errs, stuck.GVR.GroupResource())
	}
	if msg := errs[stuck.GVR.GroupResource()].Error(); !strings.Contains(msg, "stucks") || !strings.Contains(msg, timeout.String()) {
		t.Errorf("error %q: want the resource and the timeout named", msg)
	}
	if took := time.Since(began); took < timeout {
		t.Errorf("a stuck watch failed after %s, before the timeout %s", took, timeout)
	}
	if err := w.Ensure(context.Background(), infos[0], AllNamespaces()); err != nil {
		t.Errorf("ensure of a synced resource: %v", err)
	}
}

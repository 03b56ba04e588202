package aggregator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// watcher runs the informers of workload resources, started when a policy can select a
// resource or a Binding lists one of its objects, and stopped when neither holds any more
// (policyReconciler.pruneWatches). Their events go to handler.
type watcher struct {
	cache       cache.Cache // the WDS cache
	syncTimeout time.Duration
	handler     func(resourceInfo) toolscache.ResourceEventHandler
	log         logr.Logger

	mu   sync.Mutex
	regs map[string]toolscache.ResourceEventHandlerRegistration // by GVR string
}

var _ workloadWatches = (*watcher)(nil)

func newWatcher(c cache.Cache, syncTimeout time.Duration, handler func(resourceInfo) toolscache.ResourceEventHandler, log logr.Logger) *watcher {
	return &watcher{cache: c, syncTimeout: syncTimeout, handler: handler, log: log,
		regs: map[string]toolscache.ResourceEventHandlerRegistration{}}
}

// ensure starts (once) the informer of a workload resource, connects it, and waits at most
// syncTimeout (Options.WatchSyncTimeout) for its initial list. The wait is outside any lock: a
// resource whose list never succeeds (a conversion webhook down, an aggregated API failing)
// makes only the work that needs it fail — with an error naming it, retried with backoff — and
// stalls no other.
func (w *watcher) ensure(ctx context.Context, info resourceInfo) error {
	key := info.GVR.String()
	w.mu.Lock()
	reg, ok := w.regs[key]
	if !ok {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(info.GVK())
		inf, err := w.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
		if err != nil {
			w.mu.Unlock()
			return fmt.Errorf("informer for %s: %w", key, err)
		}
		if reg, err = inf.AddEventHandler(w.handler(info)); err != nil {
			w.mu.Unlock()
			return fmt.Errorf("informer for %s: %w", key, err)
		}
		w.regs[key] = reg
		w.log.V(1).Info("watching workload resource", "resource", key)
	}
	w.mu.Unlock()
	if reg.HasSynced() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(wctx.Done(), reg.HasSynced) {
		return fmt.Errorf("watch of %s: initial list not done after %s (does listing it fail?)", key, w.syncTimeout)
	}
	return nil
}

// watching reports whether the resource's informer runs and has listed its objects.
func (w *watcher) watching(info resourceInfo) bool {
	w.mu.Lock()
	reg, ok := w.regs[info.GVR.String()]
	w.mu.Unlock()
	return ok && reg.HasSynced()
}

// stopExcept stops the informers of the resources (among those given) that are not wanted (by
// GVR string) and returns the resources it stopped.
func (w *watcher) stopExcept(ctx context.Context, resources []resourceInfo, wanted map[string]bool) ([]resourceInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stopped []resourceInfo
	for _, info := range resources {
		key := info.GVR.String()
		if _, ok := w.regs[key]; !ok || wanted[key] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(info.GVK())
		if err := w.cache.RemoveInformer(ctx, u); err != nil {
			return stopped, err
		}
		delete(w.regs, key)
		stopped = append(stopped, info)
		w.log.V(1).Info("stopped watching workload resource", "resource", key)
	}
	return stopped, nil
}

// list is the GVR strings of the running informers, sorted.
func (w *watcher) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.regs))
}

package resources

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Watcher runs the informers of workload resources, started when a policy can select a
// resource or a Binding lists one of its objects, and stopped when neither holds any more
// (the policies reconciler's pruneWatches). Their events go to handler.
type Watcher struct {
	cache       cache.Cache // the WDS cache
	syncTimeout time.Duration
	handler     func(ResourceInfo) toolscache.ResourceEventHandler
	log         logr.Logger
	access      Access

	mu   sync.Mutex
	regs map[string]toolscache.ResourceEventHandlerRegistration // by GVR string
}

func NewWatcher(c cache.Cache, syncTimeout time.Duration, handler func(ResourceInfo) toolscache.ResourceEventHandler, log logr.Logger) *Watcher {
	return &Watcher{cache: c, syncTimeout: syncTimeout, handler: handler, log: log,
		regs: map[string]toolscache.ResourceEventHandlerRegistration{}}
}

// WithAccess makes w start informers only for the resources a permits (Access) and returns w.
func (w *Watcher) WithAccess(a Access) *Watcher {
	w.access = a
	return w
}

// Ensure starts (once) the informer of a workload resource, connects it, and waits at most
// syncTimeout (Options.WatchSyncTimeout) for its initial list: ensureAll of one resource.
func (w *Watcher) Ensure(ctx context.Context, info ResourceInfo) error {
	return w.EnsureAll(ctx, []ResourceInfo{info})[info.GVR.GroupResource()]
}

// EnsureAll starts (once) the informers of workload resources and connects them, then waits for
// all their initial lists together, under one syncTimeout: n resources cost the slowest initial
// list, not the sum of n waits (a clause without resources selects every resource of the WDS).
// The wait is outside any lock: a resource whose list never succeeds (a conversion webhook down,
// an aggregated API failing) makes only the work that needs it fail — with an error naming it,
// retried with backoff — and stalls no other. The result holds an error for each resource that
// is not watched and synced: a *NotReadableError for one the Access does not permit.
func (w *Watcher) EnsureAll(ctx context.Context, infos []ResourceInfo) map[schema.GroupResource]error {
	errs := map[schema.GroupResource]error{}
	regs := make([]toolscache.ResourceEventHandlerRegistration, len(infos))
	for i, info := range infos {
		reg, err := w.start(ctx, info)
		if err != nil {
			errs[info.GVR.GroupResource()] = err
			continue
		}
		regs[i] = reg
	}
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	for i, info := range infos {
		if regs[i] != nil && !WaitSynced(wctx, regs[i]) {
			errs[info.GVR.GroupResource()] = fmt.Errorf("watch of %s: initial list not done after %s (does listing it fail?)", info.GVR, w.syncTimeout)
		}
	}
	return errs
}

// start starts (once) the informer of a workload resource and connects it; it does not wait.
func (w *Watcher) start(ctx context.Context, info ResourceInfo) (toolscache.ResourceEventHandlerRegistration, error) {
	key := info.GVR.String()
	w.mu.Lock()
	reg, ok := w.regs[key]
	w.mu.Unlock()
	if ok {
		return reg, nil
	}
	// The probe is a round trip: made outside the lock.
	if err := w.access.check(ctx, info); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if reg, ok := w.regs[key]; ok {
		return reg, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	inf, err := w.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", key, err)
	}
	reg, err = inf.AddEventHandler(w.handler(info))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", key, err)
	}
	w.regs[key] = reg
	w.log.V(1).Info("watching workload resource", "resource", key)
	return reg, nil
}

// Readable returns a *NotReadableError when the resource's informer may not start (Access),
// without starting it; nil when it runs or may start.
func (w *Watcher) Readable(ctx context.Context, info ResourceInfo) error {
	w.mu.Lock()
	_, ok := w.regs[info.GVR.String()]
	w.mu.Unlock()
	if ok {
		return nil
	}
	return w.access.check(ctx, info)
}

// WaitSynced waits until every registration has been given its informer's initial list, or ctx
// ends; it reports whether all were. Unlike toolscache.WaitForCacheSync it does not poll (that
// adds up to 100 ms per wait).
func WaitSynced(ctx context.Context, regs ...toolscache.ResourceEventHandlerRegistration) bool {
	for _, r := range regs {
		select {
		case <-r.HasSyncedChecker().Done():
		case <-ctx.Done():
			if !toolscache.IsDone(r.HasSyncedChecker()) {
				return false
			}
		}
	}
	return true
}

// Watching reports whether the resource's informer runs and has listed its objects.
func (w *Watcher) Watching(info ResourceInfo) bool {
	w.mu.Lock()
	reg, ok := w.regs[info.GVR.String()]
	w.mu.Unlock()
	return ok && reg.HasSynced()
}

// StopExcept stops the informers of the resources (among those given) that are not wanted (by
// GVR string) and returns the resources it stopped.
func (w *Watcher) StopExcept(ctx context.Context, resources []ResourceInfo, wanted map[string]bool) ([]ResourceInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stopped []ResourceInfo
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

// List is the GVR strings of the running informers, sorted.
func (w *Watcher) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.regs))
}

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

// MaxNamespaces is how many namespaces a resource is watched in, one informer each, before
// it is watched cluster-wide instead (docs/security.md, "Reads").
const MaxNamespaces = 32

// Watcher runs the informers of workload resources, started when a policy can select a
// resource or a Binding lists one of its objects, and stopped when neither holds any more
// (the policies reconciler's pruneWatches). Their events go to handler.
//
// A resource is watched cluster-wide, in the cluster-wide cache it is given (Setup gives it
// one of its own, whose informers Revocations builds), or, when every clause that selects
// it names its namespaces, only in those namespaces: one informer in each namespace's own
// cache (NewNamespaceCache). Readers see one view of a resource (Reader): the cluster-wide
// informer once it has listed, else the namespaces' informers. A scope widens by starting the
// new informers and switching once they have listed; it narrows the same way, so the objects
// that stay covered are never missing from the view.
type Watcher struct {
	cache       cache.Cache // a cluster-wide cache of the WDS: cluster-wide informers
	newCache    NewNamespaceCache
	syncTimeout time.Duration
	handler     func(ResourceInfo) toolscache.ResourceEventHandler
	log         logr.Logger
	access      Access
	revoked     *Revocations    // nil: a running informer is taken as readable
	base        context.Context // the namespace caches run until it ends
	stop        context.CancelFunc

	mu      sync.Mutex
	watches map[string]*watch // by GVR string
	byGVK   map[schema.GroupVersionKind]*watch
	caches  map[string]*nsCache // by namespace
}

// watch is the informers of one resource: a cluster-wide one (all) or one per namespace (ns);
// both while the scope changes, until the new ones have listed.
type watch struct {
	info ResourceInfo
	all  *informer
	ns   map[string]*informer
	// widened counts the times the scope widened: a narrowing gives way to a widening that
	// happened while it waited.
	widened int
	// narrowing: a narrowing from cluster-wide waits for the namespaces' informers, which must
	// not be stopped as redundant meanwhile.
	narrowing int
}

type informer struct {
	inf cache.Informer
	reg toolscache.ResourceEventHandlerRegistration
}

func (wt *watch) allSynced() bool { return wt.all != nil && wt.all.reg.HasSynced() }

// scope is what the informers of wt cover once they have listed.
func (wt *watch) scope() Scope {
	if wt.all != nil {
		return AllNamespaces()
	}
	return InNamespaces(slices.Collect(maps.Keys(wt.ns))...)
}

// NewWatcher returns a Watcher whose informers are cluster-wide in c; WithNamespaceCaches lets
// it watch in single namespaces.
func NewWatcher(c cache.Cache, syncTimeout time.Duration, handler func(ResourceInfo) toolscache.ResourceEventHandler, log logr.Logger) *Watcher {
	base, stop := context.WithCancel(context.Background())
	return &Watcher{cache: c, syncTimeout: syncTimeout, handler: handler, log: log, base: base, stop: stop,
		watches: map[string]*watch{}, byGVK: map[schema.GroupVersionKind]*watch{}, caches: map[string]*nsCache{}}
}

// WithAccess makes w start informers only for the resources a permits (Access) and returns w.
func (w *Watcher) WithAccess(a Access) *Watcher {
	w.access = a
	return w
}

// WithNamespaceCaches makes w watch a resource only in the namespaces its scope names, in the
// caches newCache makes, and returns w. Without it every informer is cluster-wide.
func (w *Watcher) WithNamespaceCaches(newCache NewNamespaceCache) *Watcher {
	w.newCache = newCache
	return w
}

// Ensure starts (once) the informers of a workload resource that scope needs, connects them,
// and waits at most syncTimeout (Options.WatchSyncTimeout) for their initial list: EnsureAll
// of one resource.
func (w *Watcher) Ensure(ctx context.Context, info ResourceInfo, scope Scope) error {
	return w.EnsureAll(ctx, []Want{{Info: info, Scope: scope}})[info.GVR.GroupResource()]
}

// EnsureAll widens the informers of workload resources to cover their scopes (never narrows
// them), connects the new ones, then waits for all their initial lists together, under one
// syncTimeout: n resources cost the slowest initial list, not the sum of n waits (a clause
// without resources selects every resource of the WDS). The wait is outside any lock: a
// resource whose list never succeeds (a conversion webhook down, an aggregated API failing)
// makes only the work that needs it fail — with an error naming it, retried with backoff — and
// stalls no other. The result holds an error for each resource whose scope is not watched and
// synced: a *NotReadableError for one the Access does not permit.
func (w *Watcher) EnsureAll(ctx context.Context, wants []Want) map[schema.GroupResource]error {
	errs := map[schema.GroupResource]error{}
	regs := make([][]toolscache.ResourceEventHandlerRegistration, len(wants))
	for i, want := range wants {
		r, err := w.start(ctx, want)
		if err != nil {
			errs[want.Info.GVR.GroupResource()] = err
		}
		regs[i] = r // the namespaces it may read, when others are Forbidden
	}
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	for i, want := range wants {
		if regs[i] != nil && !WaitSynced(wctx, regs[i]...) && errs[want.Info.GVR.GroupResource()] == nil {
			errs[want.Info.GVR.GroupResource()] = fmt.Errorf("watch of %s: initial list not done after %s (does listing it fail?)", want.Info.GVR, w.syncTimeout)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, want := range wants {
		if wt := w.watches[want.Info.GVR.String()]; wt != nil && wt.allSynced() && wt.narrowing == 0 {
			w.stopNamespaces(ctx, wt, nil) // the cluster-wide informer has listed: they are redundant
		}
		if nr := w.revokedIn(want); nr != nil {
			gr := want.Info.GVR.GroupResource()
			errs[gr] = withRevoked(errs[gr], nr)
		}
	}
	return errs
}

// normalize is the scope the informers of info must have to cover want beside what they
// cover (cur): cluster-wide for a cluster-scoped resource, without namespace caches, or past
// MaxNamespaces namespaces.
func (w *Watcher) normalize(info ResourceInfo, cur, want Scope) Scope {
	s := cur.Union(want)
	if !info.Namespaced || w.newCache == nil || len(s.Namespaces) > MaxNamespaces {
		return AllNamespaces()
	}
	return s
}

// start starts the informers of a workload resource that want needs and connects them; it
// does not wait. It returns the registrations that cover want, and a *NotReadableError when
// the Access forbids some: the informers of the namespaces it permits start all the same.
func (w *Watcher) start(ctx context.Context, want Want) ([]toolscache.ResourceEventHandlerRegistration, error) {
	info, key := want.Info, want.Info.GVR.String()
	w.mu.Lock()
	all, namespaces := w.toProbe(info, want.Scope)
	w.mu.Unlock()
	// The probes are round trips: made outside the lock.
	denied := w.access.check(ctx, info, all, namespaces)
	if denied != nil && len(denied.Namespaces) == 0 {
		return nil, denied
	}
	if denied != nil {
		want.Scope = InNamespaces(slices.DeleteFunc(slices.Clone(want.Scope.Namespaces), func(ns string) bool {
			return slices.Contains(denied.Namespaces, ns)
		})...)
		if want.Scope.Empty() {
			return nil, denied
		}
	}
	w.mu.Lock()
	if again, _ := w.toProbe(info, want.Scope); again && !all {
		// Namespaces added meanwhile make it cluster-wide: that list is probed first.
		w.mu.Unlock()
		return w.start(ctx, want)
	}
	defer w.mu.Unlock()
	wt := w.watches[key]
	if wt == nil {
		wt = &watch{info: info, ns: map[string]*informer{}}
		w.watches[key], w.byGVK[info.GVK()] = wt, wt
	}
	regs, err := w.widen(ctx, wt, w.normalize(info, wt.scope(), want.Scope), want.Scope)
	if wt.all == nil && len(wt.ns) == 0 {
		delete(w.watches, key)
		delete(w.byGVK, info.GVK())
	}
	if err == nil && denied != nil {
		err = denied
	}
	return regs, err
}

// toProbe is what the Access must permit before the informers of info cover want: a new
// cluster-wide informer (all), else the namespaces of want that have no informer yet. The
// informers already running were permitted. w.mu is held.
func (w *Watcher) toProbe(info ResourceInfo, want Scope) (all bool, namespaces []string) {
	wt := w.watches[info.GVR.String()]
	if wt == nil {
		wt = &watch{}
	}
	if w.normalize(info, wt.scope(), want).All {
		return wt.all == nil, nil
	}
	for _, ns := range want.Namespaces {
		if wt.ns[ns] == nil {
			namespaces = append(namespaces, ns)
		}
	}
	return false, namespaces
}

// widen starts the informers of wt that target needs and returns the registrations that cover
// want. w.mu is held.
func (w *Watcher) widen(ctx context.Context, wt *watch, target, want Scope) ([]toolscache.ResourceEventHandlerRegistration, error) {
	if target.All {
		if wt.all == nil {
			inf, err := w.informer(ctx, w.cache, wt.info)
			if err != nil {
				return nil, err
			}
			wt.all = inf
			wt.widened++
			w.log.V(1).Info("watching workload resource", "resource", wt.info.GVR.String(), "namespaces", "*")
		}
		return []toolscache.ResourceEventHandlerRegistration{wt.all.reg}, nil
	}
	var regs []toolscache.ResourceEventHandlerRegistration
	for _, ns := range want.Namespaces {
		if inf, ok := wt.ns[ns]; ok {
			regs = append(regs, inf.reg)
			continue
		}
		nc, err := w.namespaceCache(ns)
		if err != nil {
			return nil, err
		}
		inf, err := w.informer(ctx, nc.cache, wt.info)
		if err != nil {
			w.releaseNamespaceCache(ns)
			return nil, err
		}
		wt.ns[ns] = inf
		wt.widened++
		regs = append(regs, inf.reg)
		w.log.V(1).Info("watching workload resource", "resource", wt.info.GVR.String(), "namespace", ns)
	}
	return regs, nil
}

// informer starts the informer of info in c, without waiting, and connects it to the handler.
func (w *Watcher) informer(ctx context.Context, c cache.Cache, info ResourceInfo) (*informer, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	inf, err := c.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", info.GVR, err)
	}
	reg, err := inf.AddEventHandler(w.handler(info))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", info.GVR, err)
	}
	return &informer{inf: inf, reg: reg}, nil
}

// Readable returns a *NotReadableError when the informers of want may not start (Access) where
// they do not run yet, without starting them; nil when they run or may start.
func (w *Watcher) Readable(ctx context.Context, want Want) error {
	w.mu.Lock()
	all, namespaces := w.toProbe(want.Info, want.Scope)
	w.mu.Unlock()
	if nr := w.access.check(ctx, want.Info, all, namespaces); nr != nil {
		return nr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if nr := w.revokedIn(want); nr != nil {
		return nr
	}
	return nil
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

// Watching reports whether the resource's informers cover the namespace (ignored for a
// cluster-scoped resource) and have listed its objects.
func (w *Watcher) Watching(info ResourceInfo, namespace string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.watches[info.GVR.String()]
	if !ok {
		return false
	}
	if wt.allSynced() {
		return true
	}
	inf, ok := wt.ns[namespace]
	return ok && info.Namespaced && inf.reg.HasSynced()
}

// List is the GVR strings of the running informers, sorted.
func (w *Watcher) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.watches))
}

// Informers counts the running informers: cluster-wide, and in single namespaces.
func (w *Watcher) Informers() (cluster, namespaced int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.watches {
		if wt.all != nil {
			cluster++
		}
		namespaced += len(wt.ns)
	}
	return cluster, namespaced
}

// Scopes are the scopes of the running informers, by GVR string.
func (w *Watcher) Scopes() map[string]Scope {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]Scope, len(w.watches))
	for k, wt := range w.watches {
		out[k] = wt.scope()
	}
	return out
}

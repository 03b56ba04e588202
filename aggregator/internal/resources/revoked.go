package resources

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Revocations notices that the manager lost read access to a workload resource after its
// informer started (docs/security.md, "Read access revoked"): a Role or ClusterRole narrowed, a
// binding deleted. The informers of the caches it builds (NewInformer) report every list or
// watch error to client-go's default handler, as any informer does (logged, retried with
// backoff), and a Forbidden or Unauthorized one (AccessLost), confirmed by Probe, marks their
// resource, in their namespace ("": cluster-wide), as not readable since then: their view is
// frozen. The mark clears once the view is refilled: when a streaming list (a watch with
// SendInitialEvents, client-go's default) has passed on the bookmark that ends its initial
// events, or when a watch opens after a list that succeeded since the mark. Each change calls
// OnChange.
//
// The apiserver authorizes a watch when it opens, not while it streams: a revocation shows when
// the open watch ends. NewInformer's watches last at most WatchTimeout (client-go's own last 5
// to 10 minutes); the watch of a streaming list, which carries the whole list first, is ended
// that long after the list.
type Revocations struct {
	// WatchTimeout bounds how long one watch of an informer stays open (each lasts between half
	// of it and all of it); 0: client-go's.
	WatchTimeout time.Duration
	// OnChange, when set, is called when a resource becomes not readable or readable again.
	// It must return quickly: it runs in the informer's goroutine.
	OnChange func()
	// Probe, when set, lists the resource of gvk in namespace ("": cluster-wide) live with the
	// manager's identity: a Forbidden or Unauthorized list or watch marks a resource not
	// readable only when Probe's answer is too.
	Probe func(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error

	mu   sync.Mutex
	lost map[revokedKey]Revoked
	// denied counts the Forbidden or Unauthorized errors of an informer since its last watch
	// opened.
	denied map[revokedKey]int
}

type revokedKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// Revoked is a resource's lost read access: since when, and the apiserver's answer.
type Revoked struct {
	Since time.Time
	Err   error

	relisted bool // a list succeeded since
}

// AccessLost reports whether err, from a list or watch, says that the manager's identity may
// not read: Forbidden (RBAC) or Unauthorized (its credentials). Other errors (timeouts, a
// connection refused, an expired resourceVersion) are transient.
func AccessLost(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// NewInformer is a cache.Options.NewInformer for a cache of one namespace ("": cluster-wide):
// client-go's informer, whose list and watch errors and watches are seen by r.
func (r *Revocations) NewInformer(namespace string) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		key := revokedKey{gvk: obj.GetObjectKind().GroupVersionKind(), namespace: namespace}
		r.forget(key) // a new informer: what an earlier one saw is gone with it
		inf := toolscache.NewSharedIndexInformer(r.listWatch(key, toolscache.ToListerWatcherWithContext(lw)), obj, resync, indexers)
		// The informer is not started yet: the handler can be set.
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, rf *toolscache.Reflector, err error) {
			if ctx.Err() != nil {
				return // the informer stopped: its resource is no longer watched
			}
			toolscache.DefaultWatchErrorHandler(ctx, rf, err)
			if AccessLost(err) {
				r.notReadable(ctx, key, err)
			}
		})
		return inf
	}
}

// listWatch is lwc as the informer of key lists and watches through it: a successful list is
// recorded, a watch is bounded by WatchTimeout (a streaming list's only once it has carried the
// whole initial list: streamed), and a lost read access is cleared once the informer's view is
// refilled.
func (r *Revocations) listWatch(key revokedKey, lwc toolscache.ListerWatcherWithContext) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := lwc.ListWithContext(ctx, opts)
			if err == nil {
				r.listed(key)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
			streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
			if !streaming {
				r.boundWatch(&opts)
			}
			w, err := lwc.WatchWithContext(ctx, opts)
			if err == nil {
				r.watchOpened(key)
			}
			switch {
			case err != nil:
			case streaming:
				return r.streamed(key, w), nil
			default:
				// A watch opens after the list that refilled the view, if there was one.
				r.readable(key, true)
			}
			return w, err
		},
	}
}

// streamed is w, the watch of a streaming list of the informer of key, as the informer gets it:
// once w has passed on the bookmark that ends its initial events (the reflector then replaces its
// view with them), a lost read access is cleared, and w is ended after WatchTimeout, as a plain
// watch would be (its request's timeout is left alone: it must carry the whole list first).
func (r *Revocations) streamed(key revokedKey, w apiwatch.Interface) apiwatch.Interface {
	refilled := func() { r.readable(key, false) }
	if !r.isLost(key) {
		refilled = nil
	}
	limit, bounded := r.watchSeconds()
	if refilled == nil && !bounded {
		return w
	}
	after := time.Duration(0)
	if bounded {
		after = time.Duration(limit) * time.Second
	}
	rw := &streamWatch{Interface: w, out: make(chan apiwatch.Event), stop: make(chan struct{})}
	go rw.pass(refilled, after)
	return rw
}

// streamWatch passes on the events of a streaming list's watch (streamed).
type streamWatch struct {
	apiwatch.Interface
	out  chan apiwatch.Event
	stop chan struct{}
	once sync.Once
}

func (sw *streamWatch) ResultChan() <-chan apiwatch.Event { return sw.out }

func (sw *streamWatch) Stop() {
	sw.once.Do(func() { close(sw.stop) })
	sw.Interface.Stop()
}

// pass passes on the events; at the end of the initial events it calls refilled (if set) and,
// after a positive after, stops the watch.
func (sw *streamWatch) pass(refilled func(), after time.Duration) {
	defer close(sw.out)
	for ev := range sw.Interface.ResultChan() {
		select {
		case sw.out <- ev:
		case <-sw.stop:
			return
		}
		if ev.Type != apiwatch.Bookmark || !initialEventsEnd(ev.Object) {
			continue
		}
		if refilled != nil {
			refilled()
			refilled = nil
		}
		if after > 0 {
			t := time.AfterFunc(after, sw.Interface.Stop)
			defer t.Stop()
			after = 0
		}
	}
}

// initialEventsEnd reports whether a bookmark's object ends a streaming list's initial events.
func initialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// boundWatch shortens a watch request to at most WatchTimeout (watchSeconds).
func (r *Revocations) boundWatch(opts *metav1.ListOptions) {
	secs, ok := r.watchSeconds()
	if ok && (opts.TimeoutSeconds == nil || *opts.TimeoutSeconds > secs) {
		opts.TimeoutSeconds = &secs
	}
}

// watchSeconds is how long the next watch may stay open, between half of WatchTimeout and all of
// it, in whole seconds; false without a WatchTimeout.
func (r *Revocations) watchSeconds() (int64, bool) {
	if r.WatchTimeout <= 0 {
		return 0, false
	}
	half := r.WatchTimeout.Seconds() / 2
	return max(int64(math.Round(half+rand.Float64()*half)), 1), true
}

// probeTimeout bounds the live check that confirms a lost read access.
const probeTimeout = 30 * time.Second

// notReadable marks key as not readable since now, after err, when Probe (if set) confirms it
// or when the informer's previous attempt was denied too: a Forbidden or Unauthorized answer to
// one request may be transient (an authorization webhook or a TokenReview that timed out;
// credentials that are refreshed after a 401), and Probe lists, so it cannot confirm a watch
// denied while lists are allowed.
func (r *Revocations) notReadable(ctx context.Context, key revokedKey, err error) {
	if r.isLost(key) {
		return
	}
	if r.deny(key) < 2 && r.Probe != nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		perr := r.Probe(pctx, key.gvk, key.namespace)
		cancel()
		if !AccessLost(perr) || ctx.Err() != nil {
			return // readable, or not known: the informer's next attempt tells
		}
	}
	r.mu.Lock()
	_, was := r.lost[key]
	if !was {
		if r.lost == nil {
			r.lost = map[revokedKey]Revoked{}
		}
		r.lost[key] = Revoked{Since: time.Now(), Err: err}
	}
	r.mu.Unlock()
	if !was && r.OnChange != nil {
		r.OnChange()
	}
}

// deny counts one more denied attempt of the informer of key and returns the count.
func (r *Revocations) deny(key revokedKey) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.denied == nil {
		r.denied = map[revokedKey]int{}
	}
	r.denied[key]++
	return r.denied[key]
}

func (r *Revocations) watchOpened(key revokedKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.denied, key)
}

func (r *Revocations) isLost(key revokedKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.lost[key]
	return ok
}

// listed records that the informer of key listed since it lost read access, if it did.
func (r *Revocations) listed(key revokedKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rv, ok := r.lost[key]; ok {
		rv.relisted = true
		r.lost[key] = rv
	}
}

// readable clears key; afterList: only if the informer listed since it lost read access.
func (r *Revocations) readable(key revokedKey, afterList bool) {
	r.mu.Lock()
	rv, was := r.lost[key]
	cleared := was && (!afterList || rv.relisted)
	if cleared {
		delete(r.lost, key)
	}
	r.mu.Unlock()
	if cleared && r.OnChange != nil {
		r.OnChange()
	}
}

// forget clears what r knows of the informer of key.
func (r *Revocations) forget(key revokedKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lost, key)
	delete(r.denied, key)
}

// Lost returns the lost read access of the informer of gvk in namespace ("": cluster-wide), if
// it lost it. A nil r knows of none.
func (r *Revocations) Lost(gvk schema.GroupVersionKind, namespace string) (Revoked, bool) {
	if r == nil {
		return Revoked{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.lost[revokedKey{gvk: gvk, namespace: namespace}]
	return rv, ok
}

// WithRevocations makes w report the resources whose running informers lost read access (r
// must be the Revocations of the caches w's informers run in) and returns w.
func (w *Watcher) WithRevocations(r *Revocations) *Watcher {
	w.revoked = r
	return w
}

// revokedIn is a *NotReadableError when the informers of want's resource that hold its view
// in want's scope lost read access: the cluster-wide one, or those of some namespaces
// (Namespaces); nil when none did. w.mu is held.
func (w *Watcher) revokedIn(want Want) *NotReadableError {
	wt := w.watches[want.Info.GVR.String()]
	if wt == nil || w.revoked == nil {
		return nil
	}
	gvk := want.Info.GVK()
	if wt.allSynced() {
		if rv, ok := w.revoked.Lost(gvk, ""); ok {
			return lostAccess(want.Info, rv, nil)
		}
		return nil
	}
	var namespaces []string
	var first Revoked
	for _, ns := range slices.Sorted(maps.Keys(wt.ns)) {
		if !want.Scope.Covers(ns) {
			continue
		}
		if rv, ok := w.revoked.Lost(gvk, ns); ok {
			if len(namespaces) == 0 {
				first = rv
			}
			namespaces = append(namespaces, ns)
		}
	}
	if len(namespaces) == 0 {
		return nil
	}
	return lostAccess(want.Info, first, namespaces)
}

func lostAccess(info ResourceInfo, rv Revoked, namespaces []string) *NotReadableError {
	reason := ReasonForbidden
	if apierrors.IsUnauthorized(rv.Err) {
		reason = ReasonUnauthorized
	}
	return &NotReadableError{GR: info.GVR.GroupResource(), Reason: reason, Err: rv.Err, Namespaces: namespaces, Since: rv.Since}
}

// withRevoked is err (from starting and waiting for the informers) with the lost access nr:
// nr when there was no error, or when either covers the whole resource; the namespaces of both
// when both name namespaces. Another error stays as it is.
func withRevoked(err error, nr *NotReadableError) error {
	if err == nil {
		return nr
	}
	prev, ok := IsNotReadable(err)
	switch {
	case !ok:
		return err
	case len(prev.Namespaces) == 0:
		return prev
	case len(nr.Namespaces) == 0:
		return nr
	}
	merged := *nr
	merged.Namespaces = append(slices.Clone(prev.Namespaces), nr.Namespaces...)
	slices.Sort(merged.Namespaces)
	merged.Namespaces = slices.Compact(merged.Namespaces)
	return &merged
}

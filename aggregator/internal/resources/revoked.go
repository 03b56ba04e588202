package resources

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// backoff), and a Forbidden or Unauthorized one (AccessLost) marks their resource, in their
// namespace ("": cluster-wide), as not readable since then: their view is frozen. The next
// watch the apiserver lets them open clears it; the reflector opens one after the list that
// refills the view. Each change calls OnChange.
//
// The apiserver authorizes a watch when it opens, not while it streams: a revocation shows when
// the open watch ends. NewInformer's watches last at most WatchTimeout (client-go's own last 5
// to 10 minutes).
type Revocations struct {
	// WatchTimeout bounds how long one watch of an informer stays open (each lasts between half
	// of it and all of it); 0: client-go's.
	WatchTimeout time.Duration
	// OnChange, when set, is called when a resource becomes not readable or readable again.
	// It must return quickly: it runs in the informer's goroutine.
	OnChange func()

	mu   sync.Mutex
	lost map[revokedKey]Revoked
}

type revokedKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// Revoked is a resource's lost read access: since when, and the apiserver's answer.
type Revoked struct {
	Since time.Time
	Err   error
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
		lwc := toolscache.ToListerWatcherWithContext(lw)
		inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{
			ListWithContextFunc: lwc.ListWithContext,
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
				r.boundWatch(&opts)
				w, err := lwc.WatchWithContext(ctx, opts)
				if err == nil {
					r.readable(key)
				}
				return w, err
			},
		}, obj, resync, indexers)
		// The informer is not started yet: the handler can be set.
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, rf *toolscache.Reflector, err error) {
			toolscache.DefaultWatchErrorHandler(ctx, rf, err)
			if AccessLost(err) {
				r.notReadable(key, err)
			}
		})
		return inf
	}
}

// boundWatch shortens a watch request to at most WatchTimeout.
func (r *Revocations) boundWatch(opts *metav1.ListOptions) {
	if r.WatchTimeout <= 0 {
		return
	}
	half := r.WatchTimeout.Seconds() / 2
	secs := max(int64(half+rand.Float64()*half), 1)
	if opts.TimeoutSeconds == nil || *opts.TimeoutSeconds > secs {
		opts.TimeoutSeconds = &secs
	}
}

func (r *Revocations) notReadable(key revokedKey, err error) {
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

func (r *Revocations) readable(key revokedKey) {
	if r.forget(key) && r.OnChange != nil {
		r.OnChange()
	}
}

// forget clears key and reports whether it was set.
func (r *Revocations) forget(key revokedKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, was := r.lost[key]
	delete(r.lost, key)
	return was
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

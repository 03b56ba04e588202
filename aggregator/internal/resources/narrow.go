package resources

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Narrowed is a resource whose informers StopExcept narrowed: they cover Kept now (empty: the
// resource is not watched any more). No delete event comes for the objects outside Kept.
type Narrowed struct {
	Info ResourceInfo
	Kept Scope
}

// StopExcept narrows the informers of the resources (among those given) to the scopes wanted
// (by GVR string; a resource not in wanted is not watched any more) and returns the resources
// it narrowed. A resource watched cluster-wide that is wanted in some namespaces only gets
// their informers first, and its cluster-wide informer stops once they have listed (waiting at
// most syncTimeout; else it stays, and the next call tries again): the objects that stay
// covered are never missing from the view. It never widens.
func (w *Watcher) StopExcept(ctx context.Context, resources []ResourceInfo, wanted map[string]Scope) ([]Narrowed, error) {
	type pending struct {
		wt      *watch
		kept    Scope
		widened int
		regs    []toolscache.ResourceEventHandlerRegistration
	}
	var out []Narrowed
	var toNamespaces []pending
	var firstErr error
	w.mu.Lock()
	for _, info := range resources {
		wt, ok := w.watches[info.GVR.String()]
		if !ok {
			continue
		}
		kept := wanted[info.GVR.String()]
		switch {
		case kept.Empty():
			w.stopWatch(ctx, wt)
			out = append(out, Narrowed{Info: info})
		case w.normalize(info, Scope{}, kept).All:
			if wt.allSynced() {
				w.stopNamespaces(ctx, wt, nil)
			}
		case wt.all == nil:
			if before := len(wt.ns); w.stopNamespaces(ctx, wt, kept.Covers) < before {
				out = append(out, Narrowed{Info: info, Kept: wt.scope()})
			}
		default:
			// Cluster-wide now: start the namespaces' informers, switch once they listed.
			regs, err := w.widen(ctx, wt, kept, kept)
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			wt.narrowing++
			toNamespaces = append(toNamespaces, pending{wt: wt, kept: kept, widened: wt.widened, regs: regs})
		}
	}
	w.mu.Unlock()
	if len(toNamespaces) == 0 {
		return out, firstErr
	}
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	synced := make([]bool, len(toNamespaces))
	for i, p := range toNamespaces {
		synced[i] = WaitSynced(wctx, p.regs...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range toNamespaces {
		p.wt.narrowing--
		if !synced[i] || p.wt.widened != p.widened || w.watches[p.wt.info.GVR.String()] != p.wt || p.wt.all == nil ||
			slices.ContainsFunc(p.kept.Namespaces, func(ns string) bool { return p.wt.ns[ns] == nil }) {
			continue // not listed yet, or changed meanwhile: it stays cluster-wide for now
		}
		w.removeInformer(ctx, w.cache, p.wt.info, "")
		p.wt.all = nil
		w.stopNamespaces(ctx, p.wt, p.kept.Covers)
		out = append(out, Narrowed{Info: p.wt.info, Kept: p.wt.scope()})
		w.log.V(1).Info("watching workload resource in some namespaces only", "resource", p.wt.info.GVR.String(), "namespaces", p.wt.scope().String())
	}
	return out, firstErr
}

// stopNamespaces stops the namespace informers of wt whose namespace keep does not report (nil:
// all of them) and returns how many are left. w.mu is held.
func (w *Watcher) stopNamespaces(ctx context.Context, wt *watch, keep func(string) bool) int {
	for _, ns := range slices.Sorted(maps.Keys(wt.ns)) {
		if keep != nil && keep(ns) {
			continue
		}
		if nc, ok := w.caches[ns]; ok {
			w.removeInformer(ctx, nc.cache, wt.info, ns)
		}
		w.releaseNamespaceCache(ns)
		delete(wt.ns, ns)
		w.log.V(1).Info("stopped watching workload resource", "resource", wt.info.GVR.String(), "namespace", ns)
	}
	return len(wt.ns)
}

// stopWatch stops every informer of wt and forgets it. w.mu is held.
func (w *Watcher) stopWatch(ctx context.Context, wt *watch) {
	if wt.all != nil {
		w.removeInformer(ctx, w.cache, wt.info, "")
	}
	w.stopNamespaces(ctx, wt, nil)
	delete(w.watches, wt.info.GVR.String())
	delete(w.byGVK, wt.info.GVK())
	w.log.V(1).Info("stopped watching workload resource", "resource", wt.info.GVR.String())
}

// removeInformer stops the informer of info in c, the cache of namespace ("": cluster-wide),
// and forgets whether it lost read access. Removing an informer only fails when the cache has
// stopped, which stops the informer as well: the error is logged, not returned.
func (w *Watcher) removeInformer(ctx context.Context, c cache.Cache, info ResourceInfo, namespace string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	if err := c.RemoveInformer(ctx, u); err != nil {
		w.log.Error(err, "stopping informer", "resource", info.GVR.String())
	}
	// After the informer stopped: its error handler marks nothing once stopped.
	if w.revoked != nil {
		w.revoked.forget(revokedKey{gvk: info.GVK(), namespace: namespace})
	}
}

// Cached counts the objects the informers of a resource (by GVR string) hold, over all its
// informers that have listed (the cluster-wide one and those of namespaces, which overlap only
// while the scope changes): each is listed through the cache it runs in.
func (w *Watcher) Cached(ctx context.Context, gvr string) (int, error) {
	w.mu.Lock()
	wt, ok := w.watches[gvr]
	var readers []client.Reader
	if ok && wt.allSynced() {
		readers = append(readers, w.cache)
	}
	for ns, inf := range wt.nsOrNil() {
		if inf.reg.HasSynced() {
			readers = append(readers, w.caches[ns].cache)
		}
	}
	w.mu.Unlock()
	n := 0
	for _, r := range readers {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(wt.info.GVR.GroupVersion().WithKind(wt.info.Kind + "List"))
		if err := r.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		n += len(l.Items)
	}
	return n, nil
}

// nsOrNil is wt's namespace informers; none for a nil wt.
func (wt *watch) nsOrNil() map[string]*informer {
	if wt == nil {
		return nil
	}
	return wt.ns
}

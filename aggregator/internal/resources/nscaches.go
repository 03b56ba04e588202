package resources

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// NewNamespaceCache returns a controller-runtime cache limited to one namespace (cache.New with
// Options.DefaultNamespaces), not started. The Watcher makes one for each namespace some
// resource is watched in, starts it, and stops it when no resource is watched there any more:
// namespaces come and go at runtime without restarting the manager or touching the other
// informers.
type NewNamespaceCache func(namespace string) (cache.Cache, error)

// nsCache is a started namespace cache and the resources that have an informer in it.
type nsCache struct {
	cache  cache.Cache
	cancel context.CancelFunc
	users  int
}

// namespaceCache returns the started cache of a namespace, making it on first use, and counts
// one more user of it. w.mu is held.
func (w *Watcher) namespaceCache(ns string) (*nsCache, error) {
	if c, ok := w.caches[ns]; ok {
		c.users++
		return c, nil
	}
	if w.base.Err() != nil {
		return nil, fmt.Errorf("namespace %s: the watcher has stopped", ns)
	}
	c, err := w.newCache(ns)
	if err != nil {
		return nil, fmt.Errorf("cache of namespace %s: %w", ns, err)
	}
	ctx, cancel := context.WithCancel(w.base)
	go func() {
		if err := c.Start(ctx); err != nil {
			w.log.Error(err, "cache of namespace stopped", "namespace", ns)
		}
	}()
	nc := &nsCache{cache: c, cancel: cancel, users: 1}
	w.caches[ns] = nc
	return nc, nil
}

// releaseNamespaceCache counts one user less of a namespace's cache and stops the cache when it
// has none. w.mu is held.
func (w *Watcher) releaseNamespaceCache(ns string) {
	c, ok := w.caches[ns]
	if !ok {
		return
	}
	if c.users--; c.users <= 0 {
		c.cancel()
		delete(w.caches, ns)
	}
}

// Start runs until ctx ends, then stops every namespace cache: the Watcher is a runnable of the
// manager (added by Setup), so no informer outlives it.
func (w *Watcher) Start(ctx context.Context) error {
	<-ctx.Done()
	w.stop()
	return nil
}

// NeedLeaderElection is false: the Watcher runs on every replica, to stop what it started.
func (w *Watcher) NeedLeaderElection() bool { return false }

package aggregator

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// TestCacheRunnable: the workload cache is added to the manager as its caches are (a Runnable
// with GetCache, controller-runtime's hasCache), so it starts before the controllers and stops
// after them.
func TestCacheRunnable(t *testing.T) {
	var c cache.Cache
	var r manager.Runnable = cacheRunnable{c}
	hc, ok := r.(interface {
		manager.Runnable
		GetCache() cache.Cache
	})
	if !ok || hc.GetCache() != c {
		t.Error("cacheRunnable is not added to the manager's caches")
	}
}

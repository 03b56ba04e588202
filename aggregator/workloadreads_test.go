package aggregator

import (
	"strings"
	"testing"
	"time"

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

// TestWorkloadWatchTimeoutOption: 0 is the default; under 1s is refused, naming the option.
func TestWorkloadWatchTimeoutOption(t *testing.T) {
	o := Options{WDSName: "wds1"}
	if err := o.defaults(); err != nil || o.WorkloadWatchTimeout != DefaultWorkloadWatchTimeout {
		t.Errorf("defaults: %v, timeout %s; want %s", err, o.WorkloadWatchTimeout, DefaultWorkloadWatchTimeout)
	}
	o = Options{WDSName: "wds1", WorkloadWatchTimeout: 500 * time.Millisecond}
	if err := o.defaults(); err == nil || !strings.Contains(err.Error(), "workload watch timeout 500ms") {
		t.Errorf("500ms: %v; want an error naming the workload watch timeout", err)
	}
}

package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// informerCounts are the running managers' counts of workload informers (one per manager;
// several in tests), read by statusfold_workload_informers{scope}.
var informerCounts struct {
	once   sync.Once
	mu     sync.Mutex
	counts map[*func() (cluster, namespaced int)]struct{}
}

// AddInformerCounts makes count (the Watcher's informers: cluster-wide, and in single
// namespaces) part of statusfold_workload_informers until remove is called.
func (m *Metrics) AddInformerCounts(count func() (cluster, namespaced int)) (remove func()) {
	c := &informerCounts
	c.once.Do(func() {
		c.counts = map[*func() (int, int)]struct{}{}
		gauge := func(scope string, pick func(cluster, namespaced int) int) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "statusfold_workload_informers",
				Help:        "Informers of workload resources running, by scope: cluster (one per resource watched cluster-wide) or namespace (one per resource and namespace watched).",
				ConstLabels: prometheus.Labels{"scope": scope},
			}, func() float64 {
				c.mu.Lock()
				defer c.mu.Unlock()
				n := 0
				for f := range c.counts {
					n += pick((*f)())
				}
				return float64(n)
			})
		}
		ctrlmetrics.Registry.MustRegister(gauge("cluster", func(cl, _ int) int { return cl }), gauge("namespace", func(_, ns int) int { return ns }))
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[&count] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.counts, &count)
	}
}

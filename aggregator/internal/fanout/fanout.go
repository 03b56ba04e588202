package fanout

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/objects"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// Queue is a controller's work queue as the event handlers feed it.
type Queue[K comparable] interface {
	Add(key K)
	AddAfter(key K, d time.Duration)
}

// Handlers are the informers' event handlers (handlers.go): they map each change to the work
// items it concerns on the controllers' queues, and keep the state the parts read up to date
// (the WEC index, the report, pruner and destination caches, the echo memory, the pending event
// times, the inventory-label generation). They also queue work in bulk (enqueue.go).
type Handlers struct {
	wds     cache.Cache   // the WDS cache
	its     cache.Cache   // the ITS cache
	live    client.Reader // uncached reads of the WDS
	catalog *resources.Catalog
	log     logr.Logger
	metrics *metrics.Metrics

	objects  Queue[rules.ObjectKey]
	policies Queue[string]
	kinds    Queue[rules.KindKey]

	wecs       *itscache.WECIndex
	reports    *inputs.ReportCache
	pruners    *inputs.PrunerCache
	dests      *inputs.DestsCache
	pending    *objects.EventTimes
	ownWrites  *echo.OwnWrites
	holds      *echo.Holds
	clusterGen *atomic.Uint64
	orphans    *sync.Map // rules.ObjectKey → struct{}: see inputs.Gatherer's orphans

	// internal: statusfold resolves the Bindings (BindingResolutionInternal); else another
	// controller writes them.
	internal bool
	// versionRefresh and ownVersionRefresh: see onWorkload.
	versionRefresh, ownVersionRefresh time.Duration
	// servesAggregationPolicies reports whether the AggregationPolicy kind is served (then it is
	// watched), as found when the controllers start.
	servesAggregationPolicies func() bool

	// report reports a WorkStatus over the status size cap on its workload object (nil: logged only).
	report *report.Reporter
}

// Config are the Handlers' dependencies (see Handlers' fields of the same names).
type Config struct {
	WDS, ITS                          cache.Cache
	Live                              client.Reader
	Catalog                           *resources.Catalog
	Log                               logr.Logger
	Metrics                           *metrics.Metrics // nil: a recovered panic is only logged
	Objects                           Queue[rules.ObjectKey]
	Policies                          Queue[string]
	Kinds                             Queue[rules.KindKey]
	WECs                              *itscache.WECIndex
	Reports                           *inputs.ReportCache
	Pruners                           *inputs.PrunerCache
	Dests                             *inputs.DestsCache
	Pending                           *objects.EventTimes
	OwnWrites                         *echo.OwnWrites
	Holds                             *echo.Holds
	ClusterGen                        *atomic.Uint64
	Orphans                           *sync.Map
	Internal                          bool
	VersionRefresh, OwnVersionRefresh time.Duration
	ServesAggregationPolicies         func() bool
	Report                            *report.Reporter
}

// New returns the event handlers of c's queues and state.
func New(c Config) *Handlers {
	return &Handlers{wds: c.WDS, its: c.ITS, live: c.Live, catalog: c.Catalog, log: c.Log, metrics: c.Metrics,
		objects: c.Objects, policies: c.Policies, kinds: c.Kinds,
		wecs: c.WECs, reports: c.Reports, pruners: c.Pruners, dests: c.Dests, pending: c.Pending, ownWrites: c.OwnWrites,
		holds: c.Holds, clusterGen: c.ClusterGen, orphans: c.Orphans, internal: c.Internal,
		versionRefresh: c.VersionRefresh, ownVersionRefresh: c.OwnVersionRefresh, servesAggregationPolicies: c.ServesAggregationPolicies,
		report: c.Report}
}

// Workload is the event handler of a workload resource's informer (resources.Watcher).
func (h *Handlers) Workload(info resources.ResourceInfo) toolscache.ResourceEventHandler {
	return h.handlerFuncs(h.onWorkload(info))
}

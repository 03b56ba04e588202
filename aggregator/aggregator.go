package aggregator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator/internal/combined"
	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/kinds"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/objects"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/policies"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/statusreturn"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/webhooks/check"
)

// Aggregator is the reconciler: the event handlers that map changes to work items (handlers.go),
// the three controllers that work them off (controllers.go), and the parts those run, each with
// only the dependencies it uses (see the package documentation). Setup builds it and adds its
// controllers to the manager.
type Aggregator struct {
	opts     Options
	log      logr.Logger
	wdsCache cache.Cache
	live     client.Reader // uncached reads of the WDS
	its      cluster.Cluster
	catalog  *resources.Catalog
	metrics  *metrics.Metrics
	report   *report.Reporter

	// The controllers' queues (the event handlers feed them) and reconcilers.
	objects  *pacing.CoalescingQueue[rules.ObjectKey]
	policies *pacing.CoalescingQueue[string]
	kinds    *pacing.CoalescingQueue[rules.KindKey]
	// pacer paces the objects controller's writes (nil: Options.MaxWriteDelay turns it off).
	pacer *pacing.Pacer[rules.ObjectKey]

	objectR *objects.Reconciler
	policyR *policies.Reconciler
	kindsR  *kinds.Reconciler

	// State that the event handlers keep up to date for the parts.
	wecs       *itscache.WECIndex
	reports    *inputs.ReportCache
	pruners    *inputs.PrunerCache
	dests      *inputs.DestsCache
	pending    *objects.EventTimes
	ownWrites  *echo.OwnWrites
	clusterGen *atomic.Uint64
	orphans    *sync.Map // ObjectKey → struct{}: see gatherer.orphans
	watches    *resources.Watcher

	// versionRefresh and ownVersionRefresh: see onWorkload.
	versionRefresh, ownVersionRefresh time.Duration
	// servesAggregationPolicies reports whether the AggregationPolicy kind is served (then it is
	// watched), as found when the controllers start.
	servesAggregationPolicies func() bool
}

// Setup adds the reconciler to mgr: the ITS cluster (a separate cache, reading only this WDS's
// WorkStatuses), the field indexes, and the three controllers (controllers.go), which run while
// the manager leads. Start mgr afterwards.
func Setup(mgr manager.Manager, opts Options) (*Aggregator, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	itsCfg := opts.ITSConfig
	if itsCfg == nil {
		itsCfg = mgr.GetConfig()
	}
	newInformer, err := itscache.ITSInformers(itsCfg, mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	its, err := cluster.New(itsCfg, func(o *cluster.Options) {
		o.Scheme = mgr.GetScheme()
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&controlv1alpha1.WorkStatus{}: {Label: labels.SelectorFromSet(labels.Set{controlv1alpha1.LabelOriginWDSName: opts.WDSName})},
		}
		o.Cache.DefaultTransform = itscache.TrimITSObject
		o.Cache.NewInformer = newInformer // lists trimmed item by item (itslist.go)
	})
	if err != nil {
		return nil, fmt.Errorf("aggregator: ITS client: %w", err)
	}
	if err := mgr.Add(its); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if opts.Schemas == nil {
		opts.Schemas = check.NewDiscoverySchemas(disc.OpenAPIV3(), opts.CatalogRefresh)
	}
	compiler, err := collector.NewCompiler(opts.CompilerOptions...)
	if err != nil {
		return nil, fmt.Errorf("aggregator: collector engine: %w", err)
	}
	engine, err := aggregation.NewEngine(opts.AggregationOptions...)
	if err != nil {
		return nil, fmt.Errorf("aggregator: aggregation engine: %w", err)
	}
	log := mgr.GetLogger().WithName("aggregator")
	var pacer *pacing.Pacer[rules.ObjectKey] // paces the objects controller's writes (docs/controller.md, "Pacing writes")
	if opts.MaxWriteDelay > 0 {
		pacer = pacing.NewPacer[rules.ObjectKey](pacing.PacerOptions{MaxDelay: opts.MaxWriteDelay, DepthHigh: 4 * opts.Workers, DepthLow: opts.Workers})
	}
	recorder := mgr.GetEventRecorder(rules.FieldManager)
	a := &Aggregator{
		opts:     opts,
		log:      log,
		wdsCache: mgr.GetCache(),
		live:     mgr.GetAPIReader(),
		its:      its,
		catalog:  resources.NewCatalog(disc, opts.CatalogRefresh),
		metrics:  metrics.New(),
		objects:  pacing.NewPacedCoalescingQueue(controllerObjects, opts.CoalesceDelay, pacer, clock.RealClock{}),
		pacer:    pacer,
		policies: pacing.NewCoalescingQueue[string](controllerPolicies, opts.CoalesceDelay),
		kinds:    pacing.NewCoalescingQueue[rules.KindKey](controllerKinds, opts.CoalesceDelay),

		wecs:       itscache.NewWECIndex(),
		reports:    inputs.NewReportCache(),
		pruners:    inputs.NewPrunerCache(),
		dests:      inputs.NewDestsCache(),
		pending:    objects.NewEventTimes(),
		ownWrites:  &echo.OwnWrites{},
		clusterGen: &atomic.Uint64{},
		orphans:    &sync.Map{},

		versionRefresh: DefaultVersionRefreshDelay, ownVersionRefresh: DefaultOwnVersionRefreshDelay,
	}
	a.watches = resources.NewWatcher(a.wdsCache, opts.WatchSyncTimeout, func(info resources.ResourceInfo) toolscache.ResourceEventHandler {
		return handlerFuncs(a.onWorkload(info))
	}, log)
	failures := report.NewThrottle(report.FailureWindow)
	w := writer.New(mgr.GetClient(), opts.Schemas, failures, a.metrics, pacer, log, recorder)
	reporter := &report.Reporter{Log: log, Recorder: recorder, Failures: failures, Kinds: a.catalog}
	a.report = reporter
	inputs := inputs.New(inputs.Config{Cache: a.wdsCache, Live: a.live, Catalog: a.catalog, Watches: a.watches, Orphans: a.orphans,
		WECs: a.wecs, Reports: a.reports, Pruners: a.pruners, ClusterGen: a.clusterGen,
		InventoryLabels: inputs.CachedInventoryLabels(its.GetCache()), Metrics: a.metrics, Log: log})
	a.objectR = objects.New(objects.Config{
		Inputs: inputs,
		Combined: combined.New(combined.Config{Cache: a.wdsCache, WDS: mgr.GetClient(), Compiler: compiler,
			Dests: a.dests, Writer: w, OwnWrites: a.ownWrites, Metrics: a.metrics}),
		Returns: statusreturn.New(statusreturn.Config{Elsewhere: inputs.ReturnedElsewhere, Engine: engine, Dests: a.dests, Writer: w,
			Report: reporter, OwnWrites: a.ownWrites, Metrics: a.metrics, Log: log, Recorder: recorder}),
		Pending: a.pending,
		Metrics: a.metrics,
		Pacer:   pacer,
	})
	a.policyR = policies.New(policies.Config{Cache: a.wdsCache, Inventory: its.GetCache(), WDS: mgr.GetClient(), Catalog: a.catalog,
		Watches: a.watches, OwnWrites: a.ownWrites, Compiler: compiler, Writer: w, Report: reporter, Metrics: a.metrics,
		Recorder: recorder, Internal: opts.BindingResolution == BindingResolutionInternal})
	a.kindsR = kinds.New(kinds.Config{Cache: a.wdsCache, Compiler: compiler, Policies: engine, Writer: w, Metrics: a.metrics,
		Recorder: recorder, Reevaluate: a.enqueueBoundOf})
	a.catalog.OnRecovered = a.groupRecovered
	if err := index.AddIndexes(context.Background(), mgr); err != nil {
		return nil, err
	}
	// AggregationPolicy is statusfold's own kind: watched only where its CRD is installed.
	mapper := mgr.GetRESTMapper()
	a.servesAggregationPolicies = sync.OnceValue(func() bool {
		_, err := mapper.RESTMapping(policyv1alpha1.GroupVersion.WithKind(rules.KindAggregationPolicy).GroupKind())
		if err != nil {
			a.log.Info("AggregationPolicy kind not served: built-in aggregation modules only", "reason", err.Error())
		}
		return err == nil
	})
	if err := a.addControllers(mgr); err != nil {
		return nil, err
	}
	return a, nil
}

// WatchedResources lists the workload resources whose informers run, sorted.
func (a *Aggregator) WatchedResources() []string { return a.watches.List() }

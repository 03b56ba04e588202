package aggregator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator/internal/combined"
	"github.com/statusfold/statusfold/aggregator/internal/controllers"
	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/fanout"
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
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
)

// parts are what buildParts made and addControllers adds to the manager: the controllers'
// queues, their reconcilers and the event handlers that feed the queues. Only Setup holds them;
// each part got its own dependencies when it was built.
type parts struct {
	opts     Options
	log      logr.Logger
	objects  *pacing.CoalescingQueue[rules.ObjectKey]
	policies *pacing.CoalescingQueue[string]
	kinds    *pacing.CoalescingQueue[rules.KindKey]
	// pacer paces the objects controller's writes (nil: Options.MaxWriteDelay turns it off).
	pacer    *pacing.Pacer[rules.ObjectKey]
	objectR  *objects.Reconciler
	policyR  *policies.Reconciler
	kindsR   *kinds.Reconciler
	handlers *fanout.Handlers
	catalog  *resources.Catalog
	watches  *resources.Watcher
	// workloadCache runs the cluster-wide informers of workload resources; revoked sees
	// theirs and those of the namespace caches lose read access.
	workloadCache cache.Cache
	revoked       *resources.Revocations
	metrics       *metrics.Metrics
	report        *report.Reporter
}

// buildParts builds the reconciler's parts, each with the dependencies it uses.
func buildParts(mgr manager.Manager, opts Options, its cluster.Cluster, catalog *resources.Catalog,
	compiler *collector.Compiler, engine *aggregation.Engine, reads workloadReads) *parts {
	log := mgr.GetLogger().WithName("aggregator")
	var pacer *pacing.Pacer[rules.ObjectKey] // docs/controller.md, "Pacing writes"
	if opts.MaxWriteDelay > 0 {
		pacer = pacing.NewPacer[rules.ObjectKey](pacing.PacerOptions{MaxDelay: opts.MaxWriteDelay, DepthHigh: 4 * opts.Workers, DepthLow: opts.Workers})
	}
	recorder := mgr.GetEventRecorder(rules.FieldManager)
	p := &parts{opts: opts, log: log, catalog: catalog, metrics: metrics.New(), pacer: pacer, workloadCache: reads.cache, revoked: reads.revoked,
		objects:  objectsQueue(opts, pacer),
		policies: pacing.NewCoalescingQueue[string](controllers.Policies, opts.CoalesceDelay),
		kinds:    pacing.NewCoalescingQueue[rules.KindKey](controllers.Kinds, opts.CoalesceDelay)}
	wds, live := mgr.GetCache(), mgr.GetAPIReader()
	failures := report.NewThrottle(report.FailureWindow)
	p.report = &report.Reporter{Log: log, Recorder: recorder, Failures: failures, Kinds: catalog}
	wecs, reports, pruners, dests := itscache.NewWECIndex(), inputs.NewReportCache(), inputs.NewPrunerCache(), inputs.NewDestsCache()
	pending, ownWrites, clusterGen, orphans := objects.NewEventTimes(), echo.New(p.metrics.Echoes), &atomic.Uint64{}, &sync.Map{}
	var holds *echo.Holds // what the Bindings keep listing: only when statusfold writes them
	if opts.BindingResolution == BindingResolutionInternal {
		holds = echo.NewHolds(opts.OwnVersionRefreshDelay)
	}
	p.handlers = fanout.New(fanout.Config{WDS: wds, ITS: its.GetCache(), Live: live, Catalog: catalog, Log: log, Metrics: p.metrics,
		Objects: p.objects, Policies: p.policies, Kinds: p.kinds, WECs: wecs, Reports: reports, Pruners: pruners, Dests: dests,
		Pending: pending, OwnWrites: ownWrites, Holds: holds, ClusterGen: clusterGen, Orphans: orphans,
		Internal:       opts.BindingResolution == BindingResolutionInternal,
		VersionRefresh: opts.VersionRefreshDelay, OwnVersionRefresh: opts.OwnVersionRefreshDelay,
		ServesAggregationPolicies: servesAggregationPolicies(mgr, log), Report: p.report})
	p.watches = resources.NewWatcher(p.workloadCache, opts.WatchSyncTimeout, p.handlers.Workload, log).
		WithAccess(resources.Access{WatchSecrets: opts.WatchSecrets, Probe: listProbe(live)}).
		WithRevocations(p.revoked)
	if !opts.ClusterWideWatches {
		p.watches.WithNamespaceCaches(namespaceCaches(mgr, p.revoked))
	}
	w := writer.New(mgr.GetClient(), opts.Schemas, failures, p.metrics, pacer, log, recorder)
	budgets := writer.NewBudgets(opts.SizeBudget)
	in := inputs.New(inputs.Config{Cache: wds, Live: live, Catalog: catalog, Watches: p.watches, Orphans: orphans,
		WECs: wecs, Reports: reports, Pruners: pruners, ClusterGen: clusterGen,
		InventoryLabels: inputs.CachedInventoryLabels(its.GetCache()), Metrics: p.metrics, Log: log})
	p.objectR = objects.New(objects.Config{
		Inputs: in,
		Combined: combined.New(combined.Config{Cache: wds, WDS: mgr.GetClient(), Compiler: compiler,
			Dests: dests, Writer: w, OwnWrites: ownWrites, Metrics: p.metrics, Budgets: budgets, Report: p.report,
			ObjectBudget: opts.ObjectTimeBudget}),
		Returns: statusreturn.New(statusreturn.Config{Elsewhere: in.ReturnedElsewhere, Engine: engine, Dests: dests, Writer: w,
			Report: p.report, OwnWrites: ownWrites, Holds: holds, Metrics: p.metrics, Log: log, Recorder: recorder, Budgets: budgets}),
		Pending: pending, Metrics: p.metrics, Pacer: pacer,
	})
	p.policyR = policies.New(policies.Config{Cache: wds, Inventory: its.GetCache(), WDS: mgr.GetClient(), Catalog: catalog,
		Watches: p.watches, OwnWrites: ownWrites, Holds: holds, Compiler: compiler, Writer: w, Report: p.report, Metrics: p.metrics,
		Recorder: recorder, Internal: opts.BindingResolution == BindingResolutionInternal,
		Requeue: p.policies.AddAfter, Recheck: opts.CatalogRefresh})
	p.kindsR = kinds.New(kinds.Config{Cache: wds, Compiler: compiler, Policies: engine, Writer: w, Metrics: p.metrics,
		Recorder: recorder, Reevaluate: p.handlers.EnqueueBoundOf,
		Requeue: func(name string) { p.kinds.Add(rules.KindKey{Kind: rules.KindAggregationPolicy, Name: name}) }, Log: log})
	catalog.OnRecovered = p.handlers.GroupRecovered
	p.revoked.OnChange = func() { p.handlers.EnqueueAllPolicies(context.Background()) }
	p.revoked.Probe = gvkProbe(live)
	return p
}

// objectsQueue is the objects controller's queue: paced by pacer, fair across WECs unless
// Options.UnfairWECs (docs/controller.md "Fairness across WECs").
func objectsQueue(opts Options, pacer *pacing.Pacer[rules.ObjectKey]) *pacing.CoalescingQueue[rules.ObjectKey] {
	if opts.UnfairWECs {
		return pacing.NewPacedCoalescingQueue(controllers.Objects, opts.CoalesceDelay, pacer, clock.RealClock{})
	}
	return pacing.NewFairPacedCoalescingQueue(controllers.Objects, opts.CoalesceDelay, pacer, clock.RealClock{})
}

// addControllers adds the three controllers to mgr, each with the sources that start its work:
// the objects controller's event source connects every watched kind's informer to the queues (its
// workers start once the handlers have seen every informer's initial list, so the WEC index is
// complete), and it queues the objects that carry statusfold's labels; the policies and kinds
// controllers queue every policy and every object of our own kinds at start.
func (p *parts) addControllers(mgr manager.Manager) error {
	labelled := make(chan struct{}) // closed once the sweep for labelled objects has queued them
	events := &controllers.EventSource[rules.ObjectKey]{Register: p.handlers.RegisterHandlers,
		AfterSync: func(ctx context.Context, synced time.Time) {
			controllers.AwaitFirstPass(ctx, synced, labelled, p.objects, p.log, p.opts.AfterFirstPass)
		}}
	objectsC, err := controllers.New(controllers.Objects, p.log, p.objects, p.objects.Limiter, p.opts.Workers, p.objectR.Reconcile,
		controllers.ReportError[rules.ObjectKey](p.metrics, p.report, p.log), events,
		controllers.AtStart[rules.ObjectKey](func(ctx context.Context) {
			if p.pacer != nil {
				remove := p.metrics.AddPacer(p.pacer)
				context.AfterFunc(ctx, remove)
			}
			context.AfterFunc(ctx, p.metrics.AddInformerCounts(p.watches.Informers))
			go func() {
				defer close(labelled)
				p.handlers.EnqueueLabelled(ctx)
			}()
			go p.catalog.RefreshWhileDegraded(ctx, p.opts.CatalogRefresh)
		}))
	if err != nil {
		return err
	}
	policiesC, err := controllers.New(controllers.Policies, p.log, p.policies, p.policies.Limiter, 1, p.policyR.Reconcile,
		controllers.ReportError[string](p.metrics, p.report, p.log), controllers.AtStart[string](p.handlers.EnqueueAllPolicies))
	if err != nil {
		return err
	}
	kindsC, err := controllers.New(controllers.Kinds, p.log, p.kinds, p.kinds.Limiter, 1, p.kindsR.Reconcile,
		controllers.ReportError[rules.KindKey](p.metrics, p.report, p.log), controllers.AtStart[rules.KindKey](p.handlers.EnqueueAllKinds))
	if err != nil {
		return err
	}
	for _, c := range []manager.Runnable{cacheRunnable{p.workloadCache}, objectsC, policiesC, kindsC, p.watches} {
		if err := mgr.Add(c); err != nil {
			return err
		}
	}
	p.log.Info("controllers added", "workers", p.opts.Workers, "bindingResolution", p.opts.BindingResolution,
		"wdsName", p.opts.WDSName, "coalesceDelay", p.opts.CoalesceDelay, "maxWriteDelay", p.opts.MaxWriteDelay)
	return nil
}

// listProbe lists at most one object's metadata of a resource with the manager's identity, live,
// in the namespace of the informer to start ("": cluster-wide, so a Role there suffices for an
// informer of one namespace): the Watcher's Access asks it before an informer starts (a Forbidden
// list keeps it from starting).
func listProbe(live client.Reader) func(context.Context, resources.ResourceInfo, string) error {
	probe := gvkProbe(live)
	return func(ctx context.Context, info resources.ResourceInfo, namespace string) error {
		return probe(ctx, info.GVK(), namespace)
	}
}

// gvkProbe is listProbe by kind: the Revocations ask it to confirm a running informer's
// Forbidden or Unauthorized list or watch.
func gvkProbe(live client.Reader) func(context.Context, schema.GroupVersionKind, string) error {
	return func(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return live.List(ctx, l, client.InNamespace(namespace), client.Limit(1))
	}
}

// namespaceCaches makes the caches of single namespaces in which the Watcher runs the informers
// of resources selected in named namespaces only: the manager's scheme, mapper and HTTP client,
// and informers whose lost read access revoked sees.
func namespaceCaches(mgr manager.Manager, revoked *resources.Revocations) resources.NewNamespaceCache {
	return func(ns string) (cache.Cache, error) {
		return cache.New(mgr.GetConfig(), cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(),
			Mapper: mgr.GetRESTMapper(), DefaultNamespaces: map[string]cache.Config{ns: {}}, NewInformer: revoked.NewInformer(ns)})
	}
}

// workloadReads are the cache of the cluster-wide informers of workload resources and the
// Revocations of every workload informer (docs/security.md, "Read access revoked").
type workloadReads struct {
	cache   cache.Cache
	revoked *resources.Revocations
}

// newWorkloadReads makes the workload resources' cluster-wide cache, apart from the manager's
// cache: its informers are built by the Revocations, which the manager's cache cannot be given
// once built.
func newWorkloadReads(mgr manager.Manager, opts Options) (workloadReads, error) {
	revoked := &resources.Revocations{WatchTimeout: opts.WorkloadWatchTimeout}
	c, err := cache.New(mgr.GetConfig(), cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(), NewInformer: revoked.NewInformer("")})
	if err != nil {
		return workloadReads{}, fmt.Errorf("aggregator: workload cache: %w", err)
	}
	return workloadReads{cache: c, revoked: revoked}, nil
}

// cacheRunnable adds a cache to a manager in its group of caches (the manager's hasCache: a
// Runnable with GetCache), which starts, and syncs, before the controllers and stops after
// them; a bare cache.Cache would be among the other runnables, stopped before the controllers.
type cacheRunnable struct{ cache.Cache }

func (c cacheRunnable) GetCache() cache.Cache { return c.Cache }

package aggregator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/webhooks/check"
)

// FieldManager is the server-side apply field manager of every statusfold write.
const FieldManager = "statusfold"

// LabelExecutingCount is the label that holds |Q| while a status return is requested (docs/rules.md "Status return").
const LabelExecutingCount = "kubestellar.io/executing-count"

// KubeStellar's labels on a workload object whose `.status` holds a returned status (docs/rules.md "Wire format"), with
// the value "true": one WEC's reported state copied, or several WECs' aggregated. statusfold writes
// them beside LabelExecutingCount, and removes them with it, as KubeStellar's status controller does.
const (
	LabelSingletonStatus = "managed-by.kubestellar.io/singletonstatus"
	LabelMultiWECStatus  = "managed-by.kubestellar.io/multiwecstatus"
)

// returnLabels are the labels statusfold maintains on workload objects.
var returnLabels = []string{LabelExecutingCount, LabelSingletonStatus, LabelMultiWECStatus}

// BindingResolution says who writes the Bindings.
type BindingResolution string

// The binding resolution modes.
const (
	// BindingResolutionInternal: statusfold resolves BindingPolicies into Bindings (the default).
	BindingResolutionInternal BindingResolution = "internal"
	// BindingResolutionExternal: another controller (e.g. KubeStellar's) writes Bindings;
	// statusfold only reads them.
	BindingResolutionExternal BindingResolution = "external"
)

// Defaults of Options.
const (
	DefaultCoalesceDelay  = 0
	DefaultWorkers        = 4
	DefaultCatalogRefresh = 30 * time.Second
	// DefaultWatchSyncTimeout bounds the wait for a workload resource's first list.
	DefaultWatchSyncTimeout = 10 * time.Second
)

// Options configure the reconciler that Setup adds to a manager.
type Options struct {
	// WDSName is this WDS's name: only WorkStatuses labelled
	// transport.kubestellar.io/originWdsName=WDSName are read. Required.
	WDSName string
	// ITSConfig reaches the ITS (ManagedClusters, WorkStatuses). Nil: the manager's cluster.
	ITSConfig *rest.Config
	// BindingResolution: internal (default) or external.
	BindingResolution BindingResolution
	// CoalesceDelay: events for one object within this delay of its last evaluation cause one
	// evaluation, at the end of the delay. Default 0: an event is evaluated at once, and the
	// events that arrive while an object is being evaluated cause one more evaluation (the work
	// queue holds each object once), so bursts coalesce by themselves under load.
	CoalesceDelay time.Duration
	// Workers evaluating workload objects in parallel. Default 4.
	Workers int
	// CatalogRefresh is how often discovery is re-read for resources that `"*"` selects.
	// Default 30 s.
	CatalogRefresh time.Duration
	// WatchSyncTimeout bounds how long one evaluation waits for the first list of a workload
	// resource it starts watching; after it, the evaluation fails and is retried with backoff.
	// Default 10 s.
	WatchSyncTimeout time.Duration
	// CompilerOptions and AggregationOptions configure the engines.
	CompilerOptions    []collector.CompilerOption
	AggregationOptions []aggregation.Option
	// Schemas resolves the WDS's published schema of a kind; a returned status is pruned to it
	// before it is written (docs/controller.md, "Schema skew"). Nil: the WDS's /openapi/v3,
	// re-read when it changes, looked at at most once per CatalogRefresh.
	Schemas resolver.SchemaResolver
}

func (o *Options) defaults() error {
	if o.WDSName == "" {
		return errors.New("aggregator: Options.WDSName is required")
	}
	switch o.BindingResolution {
	case "":
		o.BindingResolution = BindingResolutionInternal
	case BindingResolutionInternal, BindingResolutionExternal:
	default:
		return fmt.Errorf("aggregator: binding resolution %q: must be internal or external", o.BindingResolution)
	}
	if o.CoalesceDelay < 0 {
		return fmt.Errorf("aggregator: coalesce delay %s: must not be negative", o.CoalesceDelay)
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.CatalogRefresh <= 0 {
		o.CatalogRefresh = DefaultCatalogRefresh
	}
	if o.WatchSyncTimeout <= 0 {
		o.WatchSyncTimeout = DefaultWatchSyncTimeout
	}
	return nil
}

// Aggregator is the reconciler. Setup builds it; it runs as a leader-elected runnable of the
// manager.
type Aggregator struct {
	opts     Options
	log      logr.Logger
	wds      client.Client // writes, and typed reads through the manager's cache
	wdsCache cache.Cache
	live     client.Reader // uncached reads of the WDS
	its      cluster.Cluster
	mapper   meta.RESTMapper
	recorder events.EventRecorder

	compiler *collector.Compiler
	engine   *aggregation.Engine
	catalog  *catalog
	metrics  *metrics

	objects  *coalescingQueue[ObjectKey]
	policies *coalescingQueue[string]
	kinds    *coalescingQueue[kindKey]

	tables       tableStore
	returned     returnMemo
	returnStates returnStates
	pruners      prunerCache
	reports      reportCache
	pending      eventTimes
	wecs         wecIndex
	dests        destsCache
	// clusterGen counts inventory label changes: an evaluation that sees another value than
	// the previous one compares every WEC's row (inventory.labels may have changed).
	clusterGen atomic.Uint64
	// ownWrites remembers the resourceVersion of statusfold's last write per written object, so
	// the watch event of that write (an echo, nothing new) does not re-evaluate the object.
	ownWrites ownWrites
	// inventoryLabels returns a WEC's inventory labels and whether it has an inventory object.
	inventoryLabels func(wec string) (map[string]string, bool)
	// aggregationPolicies: the AggregationPolicy kind is served and watched.
	aggregationPolicies bool

	// orphans are objects found at start carrying the executing-count label: they are read
	// even when no watch covers them, so a return whose Binding went while no manager ran is
	// cleared.
	orphans sync.Map // ObjectKey → struct{}

	// versionRefresh: see onWorkload.
	versionRefresh time.Duration

	// trees are the compiled status and object schemas of the kinds (schemaprune.go).
	trees *fieldTrees
	// servedDrops are the (kind, served schema, dropped fields) already reported (apply.go).
	servedDrops *lru.Cache
	// failures rate-limits the logs and Events of failures (failures.go).
	failures *throttle

	watchesMu sync.Mutex
	watches   map[string]toolscache.ResourceEventHandlerRegistration // by GVR string
}

// Setup adds the reconciler to mgr: the ITS cluster (a separate cache, reading only this WDS's
// WorkStatuses), the field indexes, and the workers. Start mgr afterwards.
func Setup(mgr manager.Manager, opts Options) (*Aggregator, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	itsCfg := opts.ITSConfig
	if itsCfg == nil {
		itsCfg = mgr.GetConfig()
	}
	its, err := cluster.New(itsCfg, func(o *cluster.Options) {
		o.Scheme = mgr.GetScheme()
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&controlv1alpha1.WorkStatus{}: {Label: labels.SelectorFromSet(labels.Set{controlv1alpha1.LabelOriginWDSName: opts.WDSName})},
		}
		o.Cache.DefaultTransform = trimITSObject
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
	m := newMetrics()
	a := &Aggregator{
		opts:     opts,
		log:      mgr.GetLogger().WithName("aggregator"),
		wds:      mgr.GetClient(),
		wdsCache: mgr.GetCache(),
		live:     mgr.GetAPIReader(),
		its:      its,
		mapper:   mgr.GetRESTMapper(),
		recorder: mgr.GetEventRecorder(FieldManager),
		compiler: compiler,
		engine:   engine,
		catalog:  newCatalog(disc, opts.CatalogRefresh),
		metrics:  m,
		objects:  newCoalescingQueue[ObjectKey]("statusfold_objects", opts.CoalesceDelay),
		policies: newCoalescingQueue[string]("statusfold_policies", opts.CoalesceDelay),
		kinds:    newCoalescingQueue[kindKey]("statusfold_kinds", opts.CoalesceDelay),
		watches:  map[string]toolscache.ResourceEventHandlerRegistration{},
		failures: newThrottle(failureWindow),
		trees:    newFieldTrees(),

		servedDrops: lru.New(256),

		versionRefresh: DefaultVersionRefreshDelay,
	}
	a.tables.init()
	a.returned.init()
	a.returnStates.init()
	a.pruners.init()
	a.reports.init()
	a.pending.init()
	a.wecs.init()
	a.dests.init()
	a.inventoryLabels = a.cachedInventoryLabels
	a.catalog.onRecovered = a.groupRecovered
	if err := a.addIndexes(context.Background(), mgr); err != nil {
		return nil, err
	}
	if err := mgr.Add(a); err != nil {
		return nil, err
	}
	return a, nil
}

// Start runs the reconciler until ctx ends: it registers the event handlers, waits for the caches
// and runs the workers. It implements manager.Runnable (and needs leader election).
func (a *Aggregator) Start(ctx context.Context) error {
	if err := a.registerHandlers(ctx); err != nil {
		return err
	}
	if !a.wdsCache.WaitForCacheSync(ctx) || !a.its.GetCache().WaitForCacheSync(ctx) {
		return errors.New("aggregator: caches did not sync")
	}
	a.log.Info("caches synced; starting workers", "workers", a.opts.Workers, "bindingResolution", a.opts.BindingResolution,
		"wdsName", a.opts.WDSName, "coalesceDelay", a.opts.CoalesceDelay)
	// Everything starts dirty: resolve every policy and reconcile every bound object.
	a.enqueueAllPolicies(ctx)
	a.enqueueAllKinds(ctx)
	go a.enqueueLabelled(ctx)
	go a.refreshWhileDegraded(ctx)
	var wg sync.WaitGroup
	run := func(n int, f func() bool) {
		for range n {
			wg.Go(func() {
				for f() {
				}
			})
		}
	}
	run(a.opts.Workers, func() bool { return processNext(ctx, a.objects, a.reconcileObject, reportError[ObjectKey](a)) })
	run(1, func() bool { return processNext(ctx, a.policies, a.reconcilePolicy, reportError[string](a)) })
	run(1, func() bool { return processNext(ctx, a.kinds, a.reconcileKind, reportError[kindKey](a)) })
	<-ctx.Done()
	a.objects.shutDown()
	a.policies.shutDown()
	a.kinds.shutDown()
	wg.Wait()
	return nil
}

// reportError returns the report function of a work queue's reconcile errors: counted, logged
// and recorded as an Event on the object (rate-limited), at default verbosity.
func reportError[K comparable](a *Aggregator) func(K, error, int) {
	return func(key K, err error, requeues int) {
		where := "reconcile"
		if strings.HasPrefix(err.Error(), "panic: ") {
			where = "panic"
		}
		a.metrics.errors.WithLabelValues(where).Inc()
		a.failure(key, "ReconcileFailed", "%s (attempt %d; retrying with backoff)", firstLine(err.Error()), requeues+1)
		if where == "panic" {
			a.log.Error(err, "recovered from a panic in a reconcile; the key is retried with backoff", "key", fmt.Sprint(key))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// trimITSObject is the ITS cache's transform: it drops the managed fields, which statusfold does
// not read there, except the newest write time of a WorkStatus (lastWrite), kept as one entry
// without field sets. Smaller cached objects are cheaper to hold, list and copy.
func trimITSObject(in any) (any, error) {
	switch o := in.(type) {
	case *controlv1alpha1.WorkStatus:
		if len(o.ManagedFields) > 0 {
			var newest *metav1.Time
			for _, mf := range o.ManagedFields {
				if mf.Time != nil && (newest == nil || mf.Time.After(newest.Time)) {
					newest = mf.Time
				}
			}
			o.ManagedFields = nil
			if newest != nil {
				o.ManagedFields = []metav1.ManagedFieldsEntry{{Time: newest}}
			}
		}
		return o, nil
	case client.Object:
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
		return o, nil
	}
	return in, nil
}

// addIndexes registers the field indexes the reconciler looks things up by.
func (a *Aggregator) addIndexes(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, indexBindingObjects, func(o client.Object) []string {
		b := o.(*controlv1alpha1.Binding)
		var keys []string
		for _, bo := range BoundObjects(&b.Spec) {
			keys = append(keys, bo.Key().String())
		}
		return keys
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, indexBindingCollectors, func(o client.Object) []string {
		b := o.(*controlv1alpha1.Binding)
		return bindingCollectors(&b.Spec)
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, indexBindingNames, bindingNames); err != nil {
		return err
	}
	// WorkStatuses are found by object through the wecIndex, which the event handler feeds.
	return mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.CombinedStatus{}, indexCombinedStatusObject, func(o client.Object) []string {
		if k, ok := combinedStatusObject(o); ok {
			return []string{k.String()}
		}
		return nil
	})
}

// Index names.
const (
	indexBindingObjects       = "statusfold.objects"
	indexBindingCollectors    = "statusfold.collectors"
	indexCombinedStatusObject = "statusfold.object"
)

// WorkStatusObject is the workload object a WorkStatus reports on (by group, resource,
// namespace and name, as the controller matches them; `statusfold status` does the same).
func WorkStatusObject(ws *controlv1alpha1.WorkStatus) ObjectKey {
	r := ws.Spec.SourceRef
	return ObjectKey{Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}
}

func combinedStatusObject(o client.Object) (ObjectKey, bool) {
	l := o.GetLabels()
	name, ok := l[controlv1alpha1.LabelCombinedStatusName]
	if !ok {
		return ObjectKey{}, false
	}
	return ObjectKey{Group: l[controlv1alpha1.LabelCombinedStatusAPIGroup], Resource: l[controlv1alpha1.LabelCombinedStatusResource],
		Namespace: l[controlv1alpha1.LabelCombinedStatusNamespace], Name: name}, true
}

func bindingCollectors(spec *controlv1alpha1.BindingSpec) []string {
	var out []string
	seen := map[string]bool{}
	for _, bo := range BoundObjects(spec) {
		for _, c := range bo.Modulation.StatusCollectors {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// enqueueLabelled queues every object that carries statusfold's executing-count label, whatever
// its resource, so that returns whose Binding disappeared while no manager ran are cleared.
func (a *Aggregator) enqueueLabelled(ctx context.Context) {
	for _, info := range a.catalog.resources(false) {
		if neverWritten[info.GVR.GroupResource()] {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(info.GVR.GroupVersion().WithKind(info.Kind + "List"))
		if err := a.live.List(ctx, list, client.HasLabels{LabelExecutingCount}); err != nil {
			continue
		}
		for _, o := range list.Items {
			k := ObjectKey{Group: info.GVR.Group, Resource: info.GVR.Resource, Namespace: o.Namespace, Name: o.Name}
			a.orphans.Store(k, struct{}{})
			a.objects.Add(k)
		}
	}
}

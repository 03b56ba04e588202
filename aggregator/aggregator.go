package aggregator

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/go-logr/logr"

	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/luaconfig"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/luahealth"
	"github.com/statusfold/statusfold/webhooks/check"
)

// Aggregator is the reconciler that Setup added to a manager, as its callers see it.
type Aggregator struct {
	watches *resources.Watcher
}

// WatchedResources lists the workload resources whose informers run, sorted.
func (a *Aggregator) WatchedResources() []string { return a.watches.List() }

// WatchedNamespaces gives, by GVR string, the namespaces the informers of each watched workload
// resource cover: "*" for every namespace, else the namespaces joined by commas.
func (a *Aggregator) WatchedNamespaces() map[string]string {
	out := map[string]string{}
	for gvr, s := range a.watches.Scopes() {
		out[gvr] = s.String()
	}
	return out
}

// CachedObjects counts the objects the informers of a workload resource (by GVR string) hold.
func (a *Aggregator) CachedObjects(ctx context.Context, gvr string) (int, error) {
	return a.watches.Cached(ctx, gvr)
}

// Setup adds the reconciler to mgr: the ITS cluster (a separate cache, reading only this WDS's
// WorkStatuses), the field indexes, and the three controllers (setup.go: buildParts,
// addControllers), which run while the manager leads. Start mgr afterwards.
func Setup(mgr manager.Manager, opts Options) (*Aggregator, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	its, err := newITSCluster(mgr, opts)
	if err != nil {
		return nil, err
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
	lua, err := luahealth.Builtin()
	if err != nil {
		return nil, fmt.Errorf("aggregator: Argo CD's Lua health checks: %w", err)
	}
	scriptErrors := luaconfig.ScriptErrors(metrics.New(), mgr.GetLogger().WithName("aggregator"), report.NewThrottle(report.FailureWindow))
	engine, err := aggregation.NewEngine(append([]aggregation.Option{aggregation.WithLuaChecks(lua),
		aggregation.WithScriptErrors(scriptErrors)}, opts.AggregationOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("aggregator: aggregation engine: %w", err)
	}
	reads, err := newWorkloadReads(mgr, opts)
	if err != nil {
		return nil, err
	}
	p := buildParts(mgr, opts, its, resources.NewCatalog(disc, opts.CatalogRefresh), compiler, engine, reads)
	if err := p.addLuaConfig(mgr, lua, engine); err != nil {
		return nil, err
	}
	if err := index.AddIndexes(context.Background(), mgr); err != nil {
		return nil, err
	}
	if err := p.addControllers(mgr); err != nil {
		return nil, err
	}
	return &Aggregator{watches: p.watches}, nil
}

// newITSCluster returns the ITS cluster: its cache holds only this WDS's WorkStatuses (and the
// inventory), trimmed by the itscache.Transform of opts (its status cap), WorkStatus lists streamed item by item.
func newITSCluster(mgr manager.Manager, opts Options) (cluster.Cluster, error) {
	itsCfg := opts.ITSConfig
	if itsCfg == nil {
		itsCfg = mgr.GetConfig()
	}
	trim := itscache.Transform{MaxStatusBytes: max(opts.MaxReportedStatusBytes, 0)} // NoStatusCap: 0, no cap
	newInformer, err := itscache.ITSInformers(itsCfg, mgr.GetScheme(), trim)
	if err != nil {
		return nil, err
	}
	its, err := cluster.New(itsCfg, func(o *cluster.Options) {
		o.Scheme = mgr.GetScheme()
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&controlv1alpha1.WorkStatus{}: {Label: labels.SelectorFromSet(labels.Set{controlv1alpha1.LabelOriginWDSName: opts.WDSName})},
		}
		o.Cache.DefaultTransform = trim.Trim
		o.Cache.NewInformer = newInformer // lists trimmed item by item (itscache.ITSInformers)
	})
	if err != nil {
		return nil, fmt.Errorf("aggregator: ITS client: %w", err)
	}
	return its, nil
}

// servesAggregationPolicies returns whether the AggregationPolicy kind is served, asked once, at
// the first call (when the controllers start): statusfold's own kind is watched only where its
// CRD is installed.
func servesAggregationPolicies(mgr manager.Manager, log logr.Logger) func() bool {
	mapper := mgr.GetRESTMapper()
	return sync.OnceValue(func() bool {
		_, err := mapper.RESTMapping(policyv1alpha1.GroupVersion.WithKind(rules.KindAggregationPolicy).GroupKind())
		if err != nil {
			log.Info("AggregationPolicy kind not served: built-in aggregation modules only", "reason", err.Error())
		}
		return err == nil
	})
}

package inputs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// Gatherer reads what one workload object's evaluation needs (Object), once per
// evaluation: the CombinedStatus writer and the status returner then work from the same inputs.
type Gatherer struct {
	cache   client.Reader // the WDS cache: Bindings, the object, ContentClassifiers
	live    client.Reader // uncached WDS reads, for objects of resources not watched
	catalog interface {
		Lookup(schema.GroupResource) (resources.ResourceInfo, bool, error)
	}
	watches workloadWatches
	// orphans are objects found at start carrying the executing-count label: they are read
	// even when no watch covers them, so a return whose Binding went while no manager ran is
	// cleared.
	orphans *sync.Map // ObjectKey → struct{}
	wecs    *itscache.WECIndex
	reports *ReportCache
	pruners *PrunerCache
	// clusterGen counts inventory label changes: an evaluation that sees another value than
	// the previous one compares every WEC's row (inventory.labels may have changed).
	clusterGen *atomic.Uint64
	// inventoryLabels returns a WEC's inventory labels and whether it has an inventory object.
	inventoryLabels func(wec string) (map[string]string, bool)
	metrics         *metrics.Metrics
	log             logr.Logger
}

// Config are a Gatherer's dependencies (see the Gatherer's fields of the same names).
type Config struct {
	Cache, Live client.Reader
	Catalog     interface {
		Lookup(schema.GroupResource) (resources.ResourceInfo, bool, error)
	}
	Watches         workloadWatches
	Orphans         *sync.Map
	WECs            *itscache.WECIndex
	Reports         *ReportCache
	Pruners         *PrunerCache
	ClusterGen      *atomic.Uint64
	InventoryLabels func(wec string) (map[string]string, bool)
	Metrics         *metrics.Metrics
	Log             logr.Logger
}

// New returns the Gatherer of c's dependencies.
func New(c Config) *Gatherer {
	return &Gatherer{cache: c.Cache, live: c.Live, catalog: c.Catalog, watches: c.Watches, orphans: c.Orphans, wecs: c.WECs,
		reports: c.Reports, pruners: c.Pruners, clusterGen: c.ClusterGen, inventoryLabels: c.InventoryLabels, metrics: c.Metrics, log: c.Log}
}

// workloadWatches are the informers of workload resources (resources.Watcher).
type workloadWatches interface {
	// Ensure starts the resource's informers that scope needs, if needed, and waits (bounded)
	// for their first list.
	Ensure(ctx context.Context, info resources.ResourceInfo, scope resources.Scope) error
	// Watching reports whether the resource's informers cover the namespace and have listed.
	Watching(info resources.ResourceInfo, namespace string) bool
	// Reader reads the objects of watched resources, one view per resource.
	Reader() client.Reader
}

var _ workloadWatches = (*resources.Watcher)(nil)

// Binding is one Binding that lists the object, with the object's entry in it.
type Binding struct {
	Binding *controlv1alpha1.Binding
	Bound   rules.BoundObject
}

// Object is everything one object's evaluation reads. WorkStatuses and inventory labels
// are looked up per WEC when needed (once per evaluation), so an evaluation that feeds only the
// WECs changed since the previous one costs no more than those WECs.
type Object struct {
	g        *Gatherer
	Key      rules.ObjectKey
	Info     resources.ResourceInfo
	Obj      *unstructured.Unstructured // nil: gone
	Bindings []Binding
	pruner   *classifier.Pruner
	prunerRV string
	// changed are the WECs whose WorkStatus changed since the evaluation of epoch prevEpoch
	// (see itscache.WECIndex.Take); epoch is this evaluation's. clusterGen is the inventory-label
	// generation when the evaluation started.
	changed          []string
	prevEpoch, epoch uint64
	clusterGen       uint64

	// The lookups below are filled on first use, under mu: the CombinedStatus writer and the
	// status returner read one Object at the same time.
	mu           sync.Mutex
	workStatuses map[string]*controlv1alpha1.WorkStatus // WEC → WorkStatus (nil: none), looked up once
	clusters     map[string]map[string]string           // WEC → inventory labels, looked up once
	decoded      map[string]Report                      // WEC → reported state, decoded on first use

	// orphan: the object was read because it carries the executing-count label (fanout's start-up sweep, EnqueueLabelled).
	orphan bool
}

// Gather reads one workload object's inputs: the Bindings that list it, its resource, the object
// itself, its resource's ContentClassifier, and which WECs' WorkStatuses changed since its previous
// evaluation. It starts the resource's watch when a Binding lists the object. An error means the
// inputs are uncertain: nothing may be removed on them, and the key is retried.
func (g *Gatherer) Gather(ctx context.Context, key rules.ObjectKey) (*Object, error) {
	in := g.Begin(key)
	// Cache reads below skip the deep copy: what they return is shared with the cache and only read.
	bindings, err := index.BindingsListing(ctx, g.cache, key)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(bindings, func(x, y controlv1alpha1.Binding) int { return strings.Compare(x.Name, y.Name) })
	for i := range bindings {
		if bo, ok := rules.BoundIn(&bindings[i].Spec, key); ok {
			in.Bindings = append(in.Bindings, Binding{Binding: &bindings[i], Bound: bo})
		}
	}
	info, known, err := g.catalog.Lookup(key.GroupResource())
	if err != nil {
		return nil, err // uncertain: nothing is removed; retried
	}
	if !known {
		return in, nil // a resource that does not exist (any more): nothing to read
	}
	in.Info = info
	watched := g.watches.Watching(info, key.Namespace)
	if len(in.Bindings) > 0 && !watched {
		if err := g.watches.Ensure(ctx, info, resources.InNamespaces(key.Namespace)); err != nil {
			return nil, err
		}
		watched = true
	}
	_, orphan := g.orphans.LoadAndDelete(key)
	in.orphan = orphan
	if watched || orphan {
		reader := g.watches.Reader()
		if !watched {
			reader = g.live
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(info.GVK())
		if err := reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, u); err == nil {
			in.Obj = u
		} else if !apierrors.IsNotFound(err) {
			if orphan {
				g.orphans.Store(key, struct{}{})
			}
			return nil, err
		}
	}
	var cc controlv1alpha1.ContentClassifier
	if err := g.cache.Get(ctx, client.ObjectKey{Name: rules.ClassifierName(info.GVR)}, &cc); err == nil {
		in.pruner, in.prunerRV = g.pruners.get(&cc), ClassifierVersion(&cc)
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	return in, nil
}

// Begin starts an evaluation of key: its inputs, with the WECs changed since its previous
// evaluation and the inventory-label generation, and nothing read yet.
func (g *Gatherer) Begin(key rules.ObjectKey) *Object {
	in := &Object{g: g, Key: key}
	// Taken first: a WorkStatus written from now on is in the next evaluation's changed set even
	// when this evaluation already reads it.
	in.clusterGen = g.clusterGen.Load()
	in.changed, in.prevEpoch, in.epoch = g.wecs.Take(key)
	return in
}

// WorkStatus returns the WorkStatus that reports the object from wec (nil: none), the same one
// for the whole evaluation. Two WorkStatuses for one object in one mailbox: the newest wins.
func (in *Object) WorkStatus(wec string) *controlv1alpha1.WorkStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.workStatusLocked(wec)
}

// workStatusLocked is workStatus, with in.mu held.
func (in *Object) workStatusLocked(wec string) *controlv1alpha1.WorkStatus {
	if ws, ok := in.workStatuses[wec]; ok {
		return ws
	}
	ws := in.g.wecs.Get(in.Key, wec)
	if in.workStatuses == nil {
		in.workStatuses = map[string]*controlv1alpha1.WorkStatus{}
	}
	in.workStatuses[wec] = ws
	return ws
}

// Cluster returns a WEC's inventory labels (nil when it has no inventory object).
func (in *Object) Cluster(wec string) map[string]string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.clusters[wec]; ok {
		return c
	}
	c, _ := in.g.inventoryLabels(wec)
	if in.clusters == nil {
		in.clusters = map[string]map[string]string{}
	}
	in.clusters[wec] = c
	return c
}

// CachedInventoryLabels returns the function that reads a WEC's inventory labels from the ITS
// cache (shared: only read).
func CachedInventoryLabels(its client.Reader) func(wec string) (map[string]string, bool) {
	return func(wec string) (map[string]string, bool) {
		return inventoryLabels(its, wec)
	}
}

func inventoryLabels(its client.Reader, wec string) (map[string]string, bool) {
	var mc clusterv1.ManagedCluster
	if err := its.Get(context.Background(), client.ObjectKey{Name: wec}, &mc, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	return mc.Labels, true
}

// reported returns the state a WEC's WorkStatus ws reports after ContentClassifier pruning (nil:
// reported nothing), and the time it was last written.
func (in *Object) reported(ws *controlv1alpha1.WorkStatus) (any, *time.Time, error) {
	if ws == nil {
		return nil, nil, nil
	}
	status, err := itscache.WorkStatusStatus(ws)
	if err != nil {
		return nil, nil, err
	}
	if in.pruner != nil {
		// The pruner reads plain values; what it removed from a compact status is compacted again
		// (when it removed nothing, the cached value is the report).
		if pruned, changed := in.pruner.PruneChanged(compactjson.Expand(status)); changed {
			status = compactjson.Compact(pruned, itscache.StatusKeySets)
		}
	}
	if status == nil {
		return nil, nil, nil
	}
	t := itscache.LastWrite(ws)
	return status, &t, nil
}

// Report is one WEC's decoded, pruned reported state.
type Report struct {
	Status any
	At     *time.Time
	// Oversize, when not empty, says why Status is unknown: the reported status is over the ITS
	// cache's cap (itscache.OversizeError); Status and At are then nil.
	Oversize string
}

// ReportedOnce is reported, decoded at most once per evaluation; an unreadable WorkStatus counts
// as "reported nothing" (and is logged and counted), one over the ITS cache's size cap as unknown
// (Report.Oversize; its events report it).
// Reports that cost something to make — pruned by a ContentClassifier, or decoded from a
// WorkStatus that did not come through the ITS cache's transform — and unreadable ones (so the
// error is logged and counted once per write, not at every re-read) are also kept across
// evaluations in g.reports, per WorkStatus UID, resource version and classifier version, so that
// is done once per write whatever re-reads it (another pair's Table, the status return, a new
// Table after a collector change). The report of a cached WorkStatus without a classifier is its
// decoded status itself, read at no cost: not kept twice (an entry costs ≈0.12 KB per
// WorkStatus).
func (in *Object) ReportedOnce(wec string) Report {
	in.mu.Lock()
	defer in.mu.Unlock()
	if r, ok := in.decoded[wec]; ok {
		return r
	}
	g := in.g
	ws := in.workStatusLocked(wec)
	keep := ws != nil && (in.pruner != nil || !itscache.Transformed(ws) || itscache.DecodeFailed(ws))
	var r Report
	ok := false
	if keep {
		r, ok = g.reports.get(ws, in.prunerRV)
	}
	if !ok {
		status, at, err := in.reported(ws)
		var oversize *itscache.OversizeError
		switch {
		case errors.As(err, &oversize):
			// Not an unreadable status: the WorkStatus's events report it (fanout).
		case err != nil:
			g.metrics.Errors.WithLabelValues("workstatus").Inc()
			g.log.Info("ignoring unreadable WorkStatus", "error", err.Error())
		}
		r = Report{Status: status, At: at}
		if oversize != nil {
			r.Oversize = oversize.Error()
		}
		if keep {
			g.reports.put(ws, in.prunerRV, r)
		}
	}
	if in.decoded == nil {
		in.decoded = map[string]Report{}
	}
	in.decoded[wec] = r
	return r
}

// ReportSig changes whenever what a WEC reported (after pruning) can have changed.
func (in *Object) ReportSig(wec string) string {
	rv := ""
	if ws := in.WorkStatus(wec); ws != nil {
		rv = string(ws.UID) + "/" + ws.ResourceVersion
	}
	return rv + "\x00" + in.prunerRV
}

package policies

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindingpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindingpolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindings/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch

// collectorCompiler is the collector engine as the policies reconciler uses it (collector.Compiler): a
// StatusCollector compiled once per generation, with the problems of its spec.
type collectorCompiler interface {
	Compile(sc *controlv1alpha1.StatusCollector) (col *collector.Collector, errs field.ErrorList, warnings []string)
}

var _ collectorCompiler = (*collector.Compiler)(nil)

// Reconciler is the statusfold_policies controller's reconciler: binding resolution
// (docs/rules.md "Bindings") — each BindingPolicy resolved into its Binding, unless another
// controller writes them — the StatusCollectorsAvailable condition on both, and the watches of
// the workload resources that policies can select.
type Reconciler struct {
	cache     client.Reader // the WDS cache
	inventory client.Reader // the ITS cache: ManagedClusters
	wds       client.Writer // deletes orphaned Bindings
	catalog   *resources.Catalog
	watches   *resources.Watcher
	ownWrites *echo.OwnWrites
	// holds are the versions the Bindings keep listing while an object's updates change nothing
	// delivered (nil: every reconcile lists the objects' current versions).
	holds    *echo.Holds
	compiler collectorCompiler
	writer   *writer.Writer
	report   *report.Reporter
	metrics  *metrics.Metrics
	recorder events.EventRecorder
	// internal: statusfold resolves BindingPolicies into Bindings (BindingResolutionInternal);
	// else another controller writes them and they are only read.
	internal bool
	// requeue queues a policy again after a delay: one whose selected resources are not all
	// read is looked at again every recheck, so its ResourcesReadable condition goes once they are.
	requeue func(name string, after time.Duration)
	recheck time.Duration

	mu sync.Mutex
	// generations are the policies' generations at their last reconcile (specChanged).
	generations map[string]int64
}

// Config are a Reconciler's dependencies (see its fields of the same names).
type Config struct {
	Cache, Inventory client.Reader
	WDS              client.Writer
	Catalog          *resources.Catalog
	Watches          *resources.Watcher
	OwnWrites        *echo.OwnWrites
	Holds            *echo.Holds
	Compiler         collectorCompiler
	Writer           *writer.Writer
	Report           *report.Reporter
	Metrics          *metrics.Metrics
	Recorder         events.EventRecorder
	Internal         bool
	Requeue          func(name string, after time.Duration)
	Recheck          time.Duration
}

// New returns the policies reconciler of c's dependencies.
func New(c Config) *Reconciler {
	return &Reconciler{cache: c.Cache, inventory: c.Inventory, wds: c.WDS, catalog: c.Catalog, watches: c.Watches, ownWrites: c.OwnWrites, holds: c.Holds,
		compiler: c.Compiler, writer: c.Writer, report: c.Report, metrics: c.Metrics, recorder: c.Recorder, internal: c.Internal,
		requeue: c.Requeue, recheck: c.Recheck}
}

// Reconcile resolves one BindingPolicy into its Binding (internal mode) and maintains the
// StatusCollectorsAvailable condition on both.
func (r *Reconciler) Reconcile(ctx context.Context, name string) error {
	r.metrics.Evaluations.WithLabelValues("policy").Inc()
	var bp controlv1alpha1.BindingPolicy
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &bp); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		kept, err := r.deleteOrphanBinding(ctx, name)
		if err != nil {
			return err
		}
		r.mu.Lock()
		delete(r.generations, name)
		r.mu.Unlock()
		return r.pruneWatches(ctx, name, kept)
	}
	var binding *controlv1alpha1.Binding
	var cur controlv1alpha1.Binding
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &cur); err == nil {
		binding = &cur
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	var policyErrs field.ErrorList
	var unread notReadable
	if r.internal {
		spec, errs, nr, err := r.resolve(ctx, &bp, binding)
		if err != nil {
			return err
		}
		policyErrs, unread = errs, nr
		if binding == nil || !equality.Semantic.DeepEqual(binding.Spec, spec) {
			written, err := r.applyBinding(ctx, &bp, spec)
			if err != nil {
				return err
			}
			// The Binding as written: its status below needs no second pass (the echo of
			// this write does not re-queue the policy: fanout's Binding handler).
			binding = written
		}
	}
	if !r.internal {
		unread = r.externalNotReadable(ctx, &bp)
	}
	conds := []controlv1alpha1.BindingPolicyCondition{r.collectorsCondition(ctx, policyCollectors(&bp))}
	readable := readableCondition(unread)
	if readable != nil {
		conds = append(conds, *readable)
		if r.requeue != nil {
			r.requeue(name, r.recheck)
		}
	}
	if err := r.applyPolicyStatus(ctx, &bp, conds, policyErrs); err != nil {
		return err
	}
	if binding != nil {
		if err := r.applyBindingStatus(ctx, binding, conds); err != nil {
			return err
		}
	}
	if r.specChanged(&bp) {
		// The policy may select less than before: its informers may narrow.
		return r.pruneWatches(ctx, name, binding)
	}
	return nil
}

// resolve lists the inventory and the objects of every resource some clause can select, and
// computes the Binding's spec. The objects of a resource that cannot be listed now (its watch
// does not sync, or its informer lost read access and its view is frozen: a NotReadableError
// from the watches), or of a group whose discovery fails (keepUncertain), keep the entries cur (the
// Binding as written, nil: none) has: nothing is dropped on uncertainty; the rest is resolved.
func (r *Reconciler) resolve(ctx context.Context, bp *controlv1alpha1.BindingPolicy, cur *controlv1alpha1.Binding) (controlv1alpha1.BindingSpec, field.ErrorList, notReadable, error) {
	// The cache reads share what they return with the cache: only read, never written.
	var mcs clusterv1.ManagedClusterList
	if err := r.inventory.List(ctx, &mcs, client.UnsafeDisableDeepCopy); err != nil {
		return controlv1alpha1.BindingSpec{}, nil, nil, err
	}
	clusters := make([]rules.InventoryCluster, 0, len(mcs.Items))
	for _, mc := range mcs.Items {
		clusters = append(clusters, rules.InventoryCluster{Name: mc.Name, Labels: mc.Labels})
	}
	wanted := r.wanted(bp)
	// All watches start at once and are waited for together.
	watchErrs := r.watches.EnsureAll(ctx, wanted)
	var objects []rules.WorkloadObject
	listed := listedVersions(cur)
	unlisted, unread, deniedIn := map[schema.GroupResource]bool{}, notReadable{}, map[schema.GroupResource][]string{}
	for _, want := range wanted {
		info, gr := want.Info, want.Info.GVR.GroupResource()
		want, denied, err := r.readablePart(want, watchErrs[gr])
		if err != nil {
			unlisted[gr] = true
			r.watchFailed(bp.Name, gr, err, unread, "")
			continue
		}
		if denied != nil {
			deniedIn[gr] = denied
			r.watchFailed(bp.Name, gr, watchErrs[gr], unread, " in "+strings.Join(denied, ", "))
		}
		items, err := r.list(ctx, want)
		if err != nil {
			return controlv1alpha1.BindingSpec{}, nil, nil, err
		}
		for i := range items {
			o := &items[i]
			wo := rules.WorkloadObject{GVR: info.GVR, Namespaced: info.Namespaced, Namespace: o.GetNamespace(),
				Name: o.GetName(), ResourceVersion: o.GetResourceVersion(), Labels: o.GetLabels()}
			wo.ResourceVersion = r.holds.Version(wo.Key(), wo.ResourceVersion, listed[wo.Key()])
			objects = append(objects, wo)
		}
	}
	nsLabels := func(ns string) map[string]string {
		var n corev1.Namespace
		if err := r.cache.Get(ctx, client.ObjectKey{Name: ns}, &n, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		return n.Labels
	}
	spec, errs := rules.ResolveBinding(bp, clusters, objects, nsLabels)
	if err := r.keepUncertain(bp, cur, unlisted); err != nil {
		return controlv1alpha1.BindingSpec{}, nil, nil, err
	}
	if cur != nil {
		rules.KeepBound(&spec, &cur.Spec, unlisted)
		rules.KeepBoundWhere(&spec, &cur.Spec, func(gr schema.GroupResource, ns string) bool {
			return !unlisted[gr] && slices.Contains(deniedIn[gr], ns)
		})
	}
	return spec, errs, unread, nil
}

// readablePart narrows want to the namespaces whose informers run when err (from the watches)
// says that only some of its namespaces may not be read: the objects of the others are resolved,
// and the Binding keeps its entries in those (denied). Otherwise want and err are returned as
// they are.
func (r *Reconciler) readablePart(want resources.Want, err error) (resources.Want, []string, error) {
	nr, ok := resources.IsNotReadable(err)
	if !ok || len(nr.Namespaces) == 0 || want.Scope.All || !want.Info.Namespaced {
		return want, nil, err
	}
	rest := slices.DeleteFunc(slices.Clone(want.Scope.Namespaces), func(ns string) bool { return slices.Contains(nr.Namespaces, ns) })
	for _, ns := range rest {
		if !r.watches.Watching(want.Info, ns) {
			return want, nil, err // not listed yet: nothing of the resource is resolved
		}
	}
	want.Scope = resources.InNamespaces(rest...)
	return want, nr.Namespaces, nil
}

// watchFailed records err, why the objects of gr are not listed (where: in some namespaces only),
// and reports it.
func (r *Reconciler) watchFailed(policy string, gr schema.GroupResource, err error, unread notReadable, where string) {
	if unread.add(gr, err) {
		r.metrics.Errors.WithLabelValues("read-access").Inc()
		r.report.Failure(policy, "ResourceNotReadable", "%v; the Binding keeps its entries for %s%s", err, gr, where)
		return
	}
	r.metrics.Errors.WithLabelValues("watch").Inc()
	r.report.Failure(policy, "ResourceNotListed", "%v; the Binding keeps its entries for %s", err, gr)
}

// list lists the objects of a resource in the namespaces of want's scope (every namespace: all
// of them), through the watches' view.
func (r *Reconciler) list(ctx context.Context, want resources.Want) ([]unstructured.Unstructured, error) {
	namespaces := want.Scope.Namespaces
	if want.Scope.All || !want.Info.Namespaced {
		namespaces = []string{""}
	}
	var items []unstructured.Unstructured
	for _, ns := range namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(want.Info.GVR.GroupVersion().WithKind(want.Info.Kind + "List"))
		if err := r.watches.Reader().List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %s: %w", want.Info.GVR, err)
		}
		items = append(items, list.Items...)
	}
	return items, nil
}

// wanted are the resources of the catalog that some clause of bp can select, each with the
// namespaces those clauses can select it in.
func (r *Reconciler) wanted(bp *controlv1alpha1.BindingPolicy) []resources.Want {
	var wanted []resources.Want
	for _, info := range r.catalog.Resources(false) {
		if scope, ok := policyScope(bp, info); ok {
			wanted = append(wanted, resources.Want{Info: info, Scope: scope})
		}
	}
	return wanted
}

// applyBinding writes the Binding's spec and returns the Binding as the apiserver answered; its
// resourceVersion is remembered, so its echo is known (fanout's Binding handler).
func (r *Reconciler) applyBinding(ctx context.Context, bp *controlv1alpha1.BindingPolicy, spec controlv1alpha1.BindingSpec) (*controlv1alpha1.Binding, error) {
	b := &controlv1alpha1.Binding{
		ObjectMeta: metav1.ObjectMeta{
			Name: bp.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy", Name: bp.Name, UID: bp.UID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: spec,
	}
	u, err := writer.ToApply(b, "Binding", false)
	if err != nil {
		return nil, err
	}
	own, rv := echo.BindingWriteKey(bp.Name), ""
	r.ownWrites.Begin(own, "binding")
	defer func() { r.ownWrites.End(own, rv) }()
	if err := r.writer.Apply(ctx, u, "", true, "binding"); err != nil {
		return nil, err
	}
	rv = u.GetResourceVersion()
	var written controlv1alpha1.Binding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &written); err != nil {
		return nil, fmt.Errorf("reading the written Binding %s: %w", bp.Name, err)
	}
	return &written, nil
}

// deleteOrphanBinding deletes the Binding of a deleted policy (garbage collection does the same
// in a full cluster; this covers control planes without it) and returns the Binding that stays
// (nil: none).
func (r *Reconciler) deleteOrphanBinding(ctx context.Context, name string) (*controlv1alpha1.Binding, error) {
	var b controlv1alpha1.Binding
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &b); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	owned := slices.ContainsFunc(b.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == "BindingPolicy" && r.Name == name
	})
	if !r.internal || !owned {
		return &b, nil
	}
	err := r.wds.Delete(ctx, &b, client.Preconditions{UID: &b.UID})
	if err == nil {
		r.metrics.Writes.WithLabelValues("binding", "delete").Inc()
	}
	return nil, client.IgnoreNotFound(err)
}

func (r *Reconciler) applyPolicyStatus(ctx context.Context, bp *controlv1alpha1.BindingPolicy, ours []controlv1alpha1.BindingPolicyCondition, errs field.ErrorList) error {
	conds, changed := mergeConditions(bp.Status.Conditions, ours)
	msgs := rules.ErrorStrings(errs)
	if !changed && bp.Status.ObservedGeneration == bp.Generation && slices.Equal(bp.Status.Errors, msgs) {
		return nil
	}
	if len(errs) > 0 {
		r.recorder.Eventf(bp, nil, corev1.EventTypeWarning, "InvalidSpec", "Resolve", "%s", strings.Join(msgs, "; "))
	}
	out := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: bp.Name},
		Status: controlv1alpha1.BindingPolicyStatus{Conditions: conds, ObservedGeneration: bp.Generation, Errors: msgs}}
	u, err := writer.ToApply(out, "BindingPolicy", true)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	return r.writer.Apply(ctx, u, "status", true, "bindingpolicy-status")
}

// applyBindingStatus writes statusfold's condition on the Binding when it changed. The Binding's
// observedGeneration and errors are not statusfold's: KubeStellar's transport controller writes
// them when it has processed a generation (docs/controller.md, "Bindings"); claiming them would
// also cost a second write of the whole Binding after every spec write.
func (r *Reconciler) applyBindingStatus(ctx context.Context, b *controlv1alpha1.Binding, ours []controlv1alpha1.BindingPolicyCondition) error {
	conds, changed := mergeConditions(b.Status.Conditions, ours)
	if !changed {
		return nil
	}
	out := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: b.Name},
		Status: controlv1alpha1.BindingStatus{Conditions: conds}}
	u, err := writer.ToApply(out, "Binding", true)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	return r.writer.Apply(ctx, u, "status", true, "binding-status")
}

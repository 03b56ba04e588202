package combined

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=combinedstatuses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=statuscollectors,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create

// collectorCompiler is the collector engine as the CombinedStatus writer uses it
// (collector.Compiler): a StatusCollector compiled once per generation, with the problems of its spec.
type collectorCompiler interface {
	Compile(sc *controlv1alpha1.StatusCollector) (col *collector.Collector, errs field.ErrorList, warnings []string)
}

var _ collectorCompiler = (*collector.Compiler)(nil)

// Writer keeps one CombinedStatus per (workload object, BindingPolicy) pair that
// references collectors (docs/rules.md "CombinedStatus"), fed incrementally from the inputs that
// the inputs.Gatherer read, and deletes the pairs' that no longer exist.
type Writer struct {
	cache     client.Reader // the WDS cache: BindingPolicies, StatusCollectors, CombinedStatuses
	wds       client.Writer // deletes CombinedStatuses, creates the report namespace
	compiler  collectorCompiler
	tables    *tableStore
	dests     *inputs.DestsCache
	writer    *writer.Writer
	ownWrites *echo.OwnWrites
	metrics   *metrics.Metrics
	budgets   *writer.Budgets
	report    *report.Reporter
	// objectBudget bounds the comprehensions of all the object's collectors, over all its pairs,
	// in one evaluation (collector.ObjectBudget; 0: no object budget).
	objectBudget time.Duration
}

// Config are a Writer's dependencies (see its fields of the same names).
type Config struct {
	Cache     client.Reader
	WDS       client.Writer
	Compiler  collectorCompiler
	Dests     *inputs.DestsCache
	Writer    *writer.Writer
	OwnWrites *echo.OwnWrites
	Metrics   *metrics.Metrics
	// Budgets are the object size budgets (nil: the default budget); Report reports trims.
	Budgets *writer.Budgets
	Report  *report.Reporter
	// ObjectBudget: see Writer.objectBudget.
	ObjectBudget time.Duration
}

// New returns the CombinedStatus writer of c's dependencies, with no Table yet.
func New(c Config) *Writer {
	w := &Writer{cache: c.Cache, wds: c.WDS, compiler: c.Compiler, tables: newTableStore(), dests: c.Dests,
		writer: c.Writer, ownWrites: c.OwnWrites, metrics: c.Metrics, budgets: c.Budgets, report: c.Report,
		objectBudget: c.ObjectBudget}
	if w.budgets == nil {
		w.budgets = writer.NewBudgets(0)
	}
	return w
}

// Sync writes the CombinedStatus of every (object, policy) pair that references collectors and
// deletes the object's others. It reports whether it wrote anything.
func (w *Writer) Sync(ctx context.Context, in *inputs.Object) (bool, error) {
	wrote := false
	want := map[string]bool{} // CombinedStatus names that should exist
	keep := map[pairKey]bool{}
	budget := collector.NewObjectBudget(w.objectBudget) // one for all the pairs
	defer budget.End()
	if in.Obj != nil {
		for _, b := range in.Bindings {
			if len(b.Bound.Modulation.StatusCollectors) == 0 {
				continue
			}
			var bp controlv1alpha1.BindingPolicy
			if err := w.cache.Get(ctx, client.ObjectKey{Name: b.Binding.Name}, &bp, client.UnsafeDisableDeepCopy); err != nil {
				if apierrors.IsNotFound(err) {
					continue // the pair's policy is gone
				}
				return wrote, err
			}
			pk := pairKey{Object: in.Key, Policy: bp.UID}
			keep[pk] = true
			cs, err := w.evaluatePair(ctx, in, b, &bp, pk, budget)
			if err != nil {
				return wrote, err
			}
			want[cs.Name] = true
			written, err := w.writeWithin(ctx, in.Key, cs)
			if err != nil {
				return wrote, err
			}
			wrote = wrote || written
		}
	}
	w.tables.dropExcept(in.Key, keep)
	var existing controlv1alpha1.CombinedStatusList
	if err := w.cache.List(ctx, &existing, client.MatchingFields{index.IndexCombinedStatusObject: in.Key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return wrote, err
	}
	for i := range existing.Items {
		cs := &existing.Items[i]
		if want[cs.Name] || !slices.ContainsFunc(cs.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == rules.FieldManager }) {
			continue
		}
		cs = cs.DeepCopy() // shared with the cache
		start := time.Now()
		err := w.wds.Delete(ctx, cs, client.Preconditions{UID: &cs.UID})
		w.writer.Observe(in.Key, pacing.WriteCombinedStatus, start, client.IgnoreNotFound(err))
		if client.IgnoreNotFound(err) != nil {
			return wrote, err
		}
		w.metrics.Writes.WithLabelValues("combinedstatus", "delete").Inc()
		wrote = true
	}
	return wrote, nil
}

// evaluatePair feeds the pair's Table and returns the CombinedStatus it should have.
// The comprehensions it evaluates are bounded by the object's budget too.
func (w *Writer) evaluatePair(ctx context.Context, in *inputs.Object, b inputs.Binding, bp *controlv1alpha1.BindingPolicy, pk pairKey,
	budget *collector.ObjectBudget) (*controlv1alpha1.CombinedStatus, error) {
	var cols []*collector.Collector
	for _, name := range b.Bound.Modulation.StatusCollectors {
		var sc controlv1alpha1.StatusCollector
		if err := w.cache.Get(ctx, client.ObjectKey{Name: name}, &sc); err != nil {
			if apierrors.IsNotFound(err) {
				continue // named in the StatusCollectorsAvailable condition
			}
			return nil, err
		}
		col, errs, _ := w.compiler.Compile(&sc)
		if len(errs) > 0 || col == nil {
			continue // reported in the collector's status
		}
		cols = append(cols, col)
	}
	dests := w.dests.Of(b.Binding)
	ts := w.tables.get(pk, cols)
	ts.table.SetObjectBudget(budget)
	ts.feed(in, cols, dests)
	results := ts.table.Results()
	for _, r := range results {
		w.metrics.Rows.Observe(float64(len(r.Rows)))
	}
	ns := in.Key.Namespace
	if ns == "" {
		ns = controlv1alpha1.ReportNamespace
	}
	return &controlv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      string(in.Obj.GetUID()) + "." + string(bp.UID),
			Namespace: ns,
			Labels: map[string]string{
				controlv1alpha1.LabelCombinedStatusAPIGroup:      in.Key.Group,
				controlv1alpha1.LabelCombinedStatusResource:      in.Key.Resource,
				controlv1alpha1.LabelCombinedStatusNamespace:     in.Key.Namespace,
				controlv1alpha1.LabelCombinedStatusName:          in.Key.Name,
				controlv1alpha1.LabelCombinedStatusBindingPolicy: bp.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: in.Obj.GetAPIVersion(), Kind: in.Obj.GetKind(), Name: in.Obj.GetName(), UID: in.Obj.GetUID(),
			}},
		},
		Results: results,
	}, nil
}

// write applies cs, a CombinedStatus of object key, unless the cached copy already says the same.
func (w *Writer) write(ctx context.Context, key rules.ObjectKey, cs *controlv1alpha1.CombinedStatus) (bool, error) {
	var cur controlv1alpha1.CombinedStatus // shared with the cache: only read
	err := w.cache.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: cs.Name}, &cur, client.UnsafeDisableDeepCopy)
	switch {
	case err == nil:
		if combinedStatusCurrent(&cur, cs) {
			return false, nil
		}
	case apierrors.IsNotFound(err):
		if cs.Namespace == controlv1alpha1.ReportNamespace {
			if err := w.ensureReportNamespace(ctx); err != nil {
				return false, err
			}
		}
	default:
		return false, err
	}
	u, err := writer.ToApply(cs, "CombinedStatus", false)
	if err != nil {
		return false, err
	}
	o := w.writer.Prepare(u)
	if w.servedCurrent(o, &cur) {
		return false, nil
	}
	own, written := echo.CombinedStatusWriteKey(cs.Namespace, cs.Name), ""
	w.ownWrites.Begin(own, "combinedstatus")
	defer func() { w.ownWrites.End(own, written) }()
	if err := w.writer.SendFor(ctx, key, pacing.WriteCombinedStatus, o, "", true, "combinedstatus"); err != nil {
		return true, err
	}
	written = u.GetResourceVersion()
	return true, nil
}

// servedCurrent reports whether cur, stored under a served schema that lacks some of the fields
// of o (KubeStellar's CRDs: aggregationErrors[].row and .count), already holds everything of o
// that the schema can hold: without it every evaluation would apply the same pruned object again.
func (w *Writer) servedCurrent(o writer.Outgoing, cur *controlv1alpha1.CombinedStatus) bool {
	if cur.Name == "" || len(o.Dropped) == 0 {
		return false
	}
	var want controlv1alpha1.CombinedStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Sent.Object, &want); err != nil {
		return false
	}
	return combinedStatusCurrent(cur, &want)
}

// combinedStatusCurrent reports whether cur already has want's labels, owner and results. Results
// are compared as JSON values, not as bytes: the apiserver re-encodes the plain JSON of Object and
// Array cells, and a CombinedStatus in an earlier wire form differs, so it is rewritten.
func combinedStatusCurrent(cur, want *controlv1alpha1.CombinedStatus) bool {
	for k, v := range want.Labels {
		if w, ok := cur.Labels[k]; !ok || w != v {
			return false
		}
	}
	if !slices.ContainsFunc(cur.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == want.OwnerReferences[0].UID }) {
		return false
	}
	return collector.ResultsEqual(cur.Results, want.Results)
}

func (w *Writer) ensureReportNamespace(ctx context.Context) error {
	var ns corev1.Namespace
	if err := w.cache.Get(ctx, client.ObjectKey{Name: controlv1alpha1.ReportNamespace}, &ns); err == nil {
		return nil
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlv1alpha1.ReportNamespace}}
	if err := w.wds.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

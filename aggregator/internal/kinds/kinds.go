package kinds

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=statuscollectors/status,verbs=get;patch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers/status,verbs=get;patch
// +kubebuilder:rbac:groups=policy.statusfold.dev,resources=aggregationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.statusfold.dev,resources=aggregationpolicies/status,verbs=get;patch

// collectorCompiler is the collector engine as the kinds reconciler uses it (collector.Compiler): a
// StatusCollector compiled once per generation, with the problems of its spec.
type collectorCompiler interface {
	Compile(sc *controlv1alpha1.StatusCollector) (col *collector.Collector, errs field.ErrorList, warnings []string)
}

var _ collectorCompiler = (*collector.Compiler)(nil)

// aggregationPolicies is the aggregation engine as the kinds reconciler uses it
// (aggregation.Engine): AggregationPolicies installed and removed.
type aggregationPolicies interface {
	SetPolicy(p *policyv1alpha1.AggregationPolicy) field.ErrorList
	RemovePolicy(name string)
	PolicyStanding(name string) (s aggregation.Standing, ok bool)
	Superseded() int
}

var _ aggregationPolicies = (*aggregation.Engine)(nil)

// Reconciler is the statusfold_kinds controller's reconciler: the status of our own kinds
// (StatusCollector, ContentClassifier, AggregationPolicy), and the AggregationPolicies installed
// in the aggregation engine.
type Reconciler struct {
	cache    client.Reader // the WDS cache
	compiler collectorCompiler
	policies aggregationPolicies
	writer   *writer.Writer
	metrics  *metrics.Metrics
	recorder events.EventRecorder
	// reevaluate queues the bound objects of an API group ("": every bound object), whose
	// status return an AggregationPolicy change can change.
	reevaluate func(ctx context.Context, group string, all bool)
	// requeue queues the reconcile of the AggregationPolicy of that name.
	requeue func(name string)
	log     logr.Logger

	// installed is, per AggregationPolicy, the spec last given to the engine and the engine's
	// verdict: a reconcile of the same spec (the echo of its own status write, a resync) neither
	// compiles it again — with its static evaluation and examples — nor re-evaluates its group.
	mu        sync.Mutex
	installed map[string]installedPolicy
	// superseded is, per superseded AggregationPolicy, the message of the Superseded Event last
	// emitted for it (inforce.go).
	superseded map[string]string
}

// installedPolicy is an AggregationPolicy's spec version (UID and generation) as the engine last
// judged it, and the problems it found.
type installedPolicy struct {
	version string
	errs    field.ErrorList
}

// Config are a Reconciler's dependencies (see its fields of the same names).
type Config struct {
	Cache      client.Reader
	Compiler   collectorCompiler
	Policies   aggregationPolicies
	Writer     *writer.Writer
	Metrics    *metrics.Metrics
	Recorder   events.EventRecorder
	Reevaluate func(ctx context.Context, group string, all bool)
	Requeue    func(name string) // the AggregationPolicy of that name (nil: none)
	Log        logr.Logger
}

// New returns the kinds reconciler of c's dependencies.
func New(c Config) *Reconciler {
	r := &Reconciler{cache: c.Cache, compiler: c.Compiler, policies: c.Policies, writer: c.Writer, metrics: c.Metrics,
		recorder: c.Recorder, reevaluate: c.Reevaluate, requeue: c.Requeue, log: c.Log, installed: map[string]installedPolicy{},
		superseded: map[string]string{}}
	if r.requeue == nil {
		r.requeue = func(string) {}
	}
	return r
}

// Reconcile maintains the status of a StatusCollector or ContentClassifier: the problems the
// engines find in its spec (objects that got in while the webhook was away, or that the engines
// judge differently since), its observed generation and its Valid condition.
func (r *Reconciler) Reconcile(ctx context.Context, k rules.KindKey) error {
	r.metrics.Evaluations.WithLabelValues("kind").Inc()
	switch k.Kind {
	case rules.KindStatusCollector:
		var sc controlv1alpha1.StatusCollector
		if err := r.cache.Get(ctx, client.ObjectKey{Name: k.Name}, &sc); err != nil {
			return client.IgnoreNotFound(err)
		}
		_, errs, _ := r.compiler.Compile(&sc)
		if len(errs) > 0 {
			r.metrics.Errors.WithLabelValues("collector").Inc()
		}
		return r.applyValidity(ctx, &sc, "StatusCollector", sc.Status.ObservedGeneration, sc.Status.Errors, sc.Status.Conditions, errs)
	case rules.KindContentClassifier:
		var cc controlv1alpha1.ContentClassifier
		if err := r.cache.Get(ctx, client.ObjectKey{Name: k.Name}, &cc); err != nil {
			return client.IgnoreNotFound(err)
		}
		errs := classifier.Validate(&cc)
		if len(errs) > 0 {
			r.metrics.Errors.WithLabelValues("classifier").Inc()
		}
		return r.applyValidity(ctx, &cc, "ContentClassifier", cc.Status.ObservedGeneration, cc.Status.Errors, cc.Status.Conditions, errs)
	case rules.KindAggregationPolicy:
		return r.reconcileAggregationPolicy(ctx, k.Name)
	}
	return nil
}

// reconcileAggregationPolicy installs a valid AggregationPolicy in the engine (an invalid one is
// ignored: the kind's built-in module applies), reports its validity and whether it is in force,
// and re-evaluates the objects of its target group.
func (r *Reconciler) reconcileAggregationPolicy(ctx context.Context, name string) error {
	defer func() { r.metrics.AggregationPoliciesSuperseded.Set(float64(r.policies.Superseded())) }()
	var ap policyv1alpha1.AggregationPolicy
	if err := r.cache.Get(ctx, client.ObjectKey{Name: name}, &ap); err != nil {
		if apierrors.IsNotFound(err) {
			was, had := r.policies.PolicyStanding(name)
			r.forget(name)
			r.policies.RemovePolicy(name)
			r.reevaluate(ctx, "", true)
			if had {
				r.requeueKinds(ctx, name, was.Target)
			}
		}
		return client.IgnoreNotFound(err)
	}
	errs := r.install(ctx, &ap)
	r.installSmaller(ctx, &ap)
	s, installed := r.policies.PolicyStanding(name)
	inForce, old := inForceCondition(&ap, s, installed && len(errs) == 0), oldInForce(&ap)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(policyv1alpha1.GroupVersion.WithKind(rules.KindAggregationPolicy))
	if err := r.applyValidityAs(ctx, &ap, u, ap.Status.ObservedGeneration, ap.Status.Errors, ap.Status.Conditions, errs, inForce); err != nil {
		return err
	}
	r.announce(&ap, s, inForce, old)
	return nil
}

// install gives ap to the engine (an invalid one is removed from it, and its group re-evaluated)
// unless the engine already judged this spec, and returns the problems found.
func (r *Reconciler) install(ctx context.Context, ap *policyv1alpha1.AggregationPolicy) field.ErrorList {
	version := string(ap.UID) + "/" + strconv.FormatInt(ap.Generation, 10)
	r.mu.Lock()
	last, ok := r.installed[ap.Name]
	r.mu.Unlock()
	if ok && last.version == version {
		return last.errs
	}
	was, had := r.policies.PolicyStanding(ap.Name)
	errs := r.policies.SetPolicy(ap)
	if len(errs) > 0 {
		r.policies.RemovePolicy(ap.Name)
		r.metrics.Errors.WithLabelValues("aggregationpolicy").Inc()
	}
	r.mu.Lock()
	r.installed[ap.Name] = installedPolicy{version: version, errs: errs}
	r.mu.Unlock()
	r.reevaluate(ctx, ap.Spec.Target.Group, false)
	gks := []schema.GroupKind{{Group: ap.Spec.Target.Group, Kind: ap.Spec.Target.Kind}}
	if had {
		gks = append(gks, was.Target)
	}
	r.requeueKinds(ctx, ap.Name, gks...)
	return errs
}

// forget drops what the engine judged of the AggregationPolicy name (it is gone).
func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.installed, name)
	delete(r.superseded, name)
}

// applyValidity writes {observedGeneration, errors, conditions[Valid]} when it differs from the
// current status, and an event for a newly invalid spec.
func (r *Reconciler) applyValidity(ctx context.Context, obj client.Object, kind string, observed int64, curErrs []string,
	curConds []metav1.Condition, errs field.ErrorList) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind(kind))
	return r.applyValidityAs(ctx, obj, u, observed, curErrs, curConds, errs)
}

// applyValidityAs is applyValidity with the apply object's apiVersion and kind already set in u,
// and the conditions extra beside Valid.
func (r *Reconciler) applyValidityAs(ctx context.Context, obj client.Object, u *unstructured.Unstructured, observed int64, curErrs []string,
	curConds []metav1.Condition, errs field.ErrorList, extra ...metav1.Condition) error {
	kind := u.GetKind()
	msgs := rules.ErrorStrings(errs)
	cond := metav1.Condition{Type: controlv1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "the spec passed validation", ObservedGeneration: obj.GetGeneration()}
	if len(errs) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, "Invalid"
		cond.Message = strings.Join(msgs, "; ")
	}
	want := append([]metav1.Condition{cond}, extra...)
	same := observed == obj.GetGeneration() && slices.Equal(curErrs, msgs)
	current, missing := conditionsCurrent(curConds, want)
	if same && current {
		return nil
	}
	conds := append([]metav1.Condition(nil), curConds...)
	for _, c := range want {
		meta.SetStatusCondition(&conds, c)
	}
	u.SetName(obj.GetName())
	status := map[string]any{"observedGeneration": obj.GetGeneration()}
	if len(msgs) > 0 {
		status["errors"] = toAnySlice(msgs)
	}
	var cl []any
	for _, c := range conds {
		cl = append(cl, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"observedGeneration": c.ObservedGeneration, "lastTransitionTime": c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z")})
	}
	status["conditions"] = cl
	u.Object["status"] = status
	if same && missing && r.conditionsNotServed(u) {
		return nil // all that the served schema can hold is there already
	}
	if len(errs) > 0 {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidSpec", "Validate", "%s", cond.Message)
	}
	return r.writer.Apply(ctx, u, "status", true, strings.ToLower(kind)+"-status")
}

// conditionsCurrent reports whether every condition of want is in conds with the same status,
// reason, message and observed generation; missing, whether one of them is absent.
func conditionsCurrent(conds, want []metav1.Condition) (current, missing bool) {
	current = true
	for _, w := range want {
		old := meta.FindStatusCondition(conds, w.Type)
		if old == nil {
			current, missing = false, true
			continue
		}
		if old.Status != w.Status || old.Reason != w.Reason || old.Message != w.Message || old.ObservedGeneration != w.ObservedGeneration {
			current = false
		}
	}
	return current, missing
}

// conditionsNotServed reports whether the schema served for u's kind has no .status.conditions
// (KubeStellar's StatusCollector CRD): the Valid condition is then never stored, and its absence
// must not make every reconcile apply the same status again.
func (r *Reconciler) conditionsNotServed(u *unstructured.Unstructured) bool {
	_, _, dropped := r.writer.PruneToServed(u)
	return slices.Contains(dropped, ".status.conditions")
}

// errorStrings is the messages of errs.

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

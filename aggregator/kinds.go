package aggregator

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=statuscollectors/status,verbs=get;patch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers/status,verbs=get;patch

// reconcileKind maintains the status of a StatusCollector or ContentClassifier: the problems the
// engines find in its spec (objects that got in while the webhook was away, or that the engines
// judge differently since), its observed generation and its Valid condition.
func (a *Aggregator) reconcileKind(ctx context.Context, k kindKey) error {
	a.metrics.evaluations.WithLabelValues("kind").Inc()
	switch k.Kind {
	case kindStatusCollector:
		var sc controlv1alpha1.StatusCollector
		if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: k.Name}, &sc); err != nil {
			return ignoreNotFound(err)
		}
		_, errs, _ := a.compiler.Compile(&sc)
		if len(errs) > 0 {
			a.metrics.errors.WithLabelValues("collector").Inc()
		}
		return a.applyValidity(ctx, &sc, "StatusCollector", sc.Status.ObservedGeneration, sc.Status.Errors, sc.Status.Conditions, errs)
	case kindContentClassifier:
		var cc controlv1alpha1.ContentClassifier
		if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: k.Name}, &cc); err != nil {
			return ignoreNotFound(err)
		}
		errs := classifier.Validate(&cc)
		if len(errs) > 0 {
			a.metrics.errors.WithLabelValues("classifier").Inc()
		}
		return a.applyValidity(ctx, &cc, "ContentClassifier", cc.Status.ObservedGeneration, cc.Status.Errors, cc.Status.Conditions, errs)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// applyValidity writes {observedGeneration, errors, conditions[Valid]} when it differs from the
// current status, and an event for a newly invalid spec.
func (a *Aggregator) applyValidity(ctx context.Context, obj client.Object, kind string, observed int64, curErrs []string,
	curConds []metav1.Condition, errs field.ErrorList) error {
	msgs := errorStrings(errs)
	cond := metav1.Condition{Type: controlv1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "the spec passed validation", ObservedGeneration: obj.GetGeneration()}
	if len(errs) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, "Invalid"
		cond.Message = strings.Join(msgs, "; ")
	}
	old := meta.FindStatusCondition(curConds, controlv1alpha1.ConditionValid)
	if observed == obj.GetGeneration() && slices.Equal(curErrs, msgs) && old != nil && old.Status == cond.Status &&
		old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	conds := append([]metav1.Condition(nil), curConds...)
	meta.SetStatusCondition(&conds, cond)
	if len(errs) > 0 {
		a.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidSpec", "Validate", "%s", cond.Message)
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind(kind))
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
	return a.apply(ctx, u, "status", true, strings.ToLower(kind)+"-status")
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

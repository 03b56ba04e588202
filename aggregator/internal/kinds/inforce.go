package kinds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
)

// The reasons of an AggregationPolicy's InForce condition (policyv1alpha1.ConditionInForce;
// docs/aggregation.md "Which policy is in force").
const (
	ReasonInForce    = "InForce"
	ReasonSuperseded = "Superseded"
	ReasonInvalid    = "Invalid"
)

// inForceCondition is the InForce condition of ap as the engine stands: True for the policy in
// force, False for a superseded one (naming the one in force) and for an invalid one.
func inForceCondition(ap *policyv1alpha1.AggregationPolicy, s aggregation.Standing, installed bool) metav1.Condition {
	c := metav1.Condition{Type: policyv1alpha1.ConditionInForce, ObservedGeneration: ap.Generation}
	switch {
	case !installed:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalid
		c.Message = "the policy is not valid (see the Valid condition): it aggregates nothing"
	case s.Superseded():
		c.Status, c.Reason = metav1.ConditionFalse, ReasonSuperseded
		c.Message = fmt.Sprintf("policy %q is in force for %s: of several valid policies for one kind, the smallest name is",
			s.InForce, kindName(s.Target))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonInForce
		c.Message = fmt.Sprintf("the policy is in force for %s", kindName(s.Target))
	}
	return c
}

// kindName is gk as group/kind (the kind alone for the core group).
func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Group + "/" + gk.Kind
}

// requeueKinds queues the reconcile of every AggregationPolicy but name that targets one of gks:
// a change of name in the engine can change which of them is in force.
func (r *Reconciler) requeueKinds(ctx context.Context, name string, gks ...schema.GroupKind) {
	var aps policyv1alpha1.AggregationPolicyList
	if err := r.cache.List(ctx, &aps); err != nil {
		return // the cache only fails when stopping
	}
	for i := range aps.Items {
		ap := &aps.Items[i]
		gk := schema.GroupKind{Group: ap.Spec.Target.Group, Kind: ap.Spec.Target.Kind}
		for _, want := range gks {
			if ap.Name != name && gk == want {
				r.requeue(ap.Name)
				break
			}
		}
	}
}

// installSmaller installs the policies of ap's target kind with smaller names that the engine has
// not judged yet, so that ap's standing is not read before them (after a start, the policies are
// reconciled in no set order; install skips a spec it has judged).
func (r *Reconciler) installSmaller(ctx context.Context, ap *policyv1alpha1.AggregationPolicy) {
	var aps policyv1alpha1.AggregationPolicyList
	if err := r.cache.List(ctx, &aps); err != nil {
		return // the cache only fails when stopping
	}
	for i := range aps.Items {
		other := &aps.Items[i]
		if other.Name < ap.Name && other.Spec.Target == ap.Spec.Target {
			r.install(ctx, other)
		}
	}
}

// announce records the InForce condition written on ap and, when ap became superseded or
// superseded by another policy, logs it and emits the Warning Event Superseded: once per change,
// neither on every reconcile nor again for what its status (old, as read) already said.
func (r *Reconciler) announce(ap *policyv1alpha1.AggregationPolicy, s aggregation.Standing, cond metav1.Condition, old *metav1.Condition) {
	r.mu.Lock()
	last, seen := r.superseded[ap.Name]
	if cond.Reason == ReasonSuperseded {
		r.superseded[ap.Name] = cond.Message
	} else {
		delete(r.superseded, ap.Name)
	}
	r.mu.Unlock()
	if cond.Reason != ReasonSuperseded || (seen && last == cond.Message) ||
		(old != nil && old.Reason == ReasonSuperseded && old.Message == cond.Message) {
		return
	}
	r.log.Info("AggregationPolicy superseded: not in force", "aggregationPolicy", ap.Name, "inForce", s.InForce, "kind", kindName(s.Target))
	r.recorder.Eventf(ap, nil, corev1.EventTypeWarning, ReasonSuperseded, "Aggregate", "%s", cond.Message)
}

// oldInForce is ap's InForce condition as read (nil: none).
func oldInForce(ap *policyv1alpha1.AggregationPolicy) *metav1.Condition {
	return meta.FindStatusCondition(ap.Status.Conditions, policyv1alpha1.ConditionInForce)
}

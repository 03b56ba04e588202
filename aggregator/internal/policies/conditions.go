package policies

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// notReadable are the resources a policy's clauses select that statusfold does not read, each
// with why (docs/security.md, "Reads").
type notReadable map[schema.GroupResource]*resources.NotReadableError

// add records err when it is a NotReadableError and reports whether it was.
func (n notReadable) add(gr schema.GroupResource, err error) bool {
	nr, ok := resources.IsNotReadable(err)
	if ok {
		n[gr] = nr
	}
	return ok
}

// externalNotReadable are the resources that bp's clauses select which statusfold does not read,
// in external binding resolution (where no list of them is made): checked without starting any
// informer.
func (r *Reconciler) externalNotReadable(ctx context.Context, bp *controlv1alpha1.BindingPolicy) notReadable {
	out := notReadable{}
	for _, want := range r.wanted(bp) {
		out.add(want.Info.GVR.GroupResource(), r.watches.Readable(ctx, want))
	}
	return out
}

// readableCondition is the ResourcesReadable condition for the resources in n, nil when n is
// empty: the condition is then removed. The Binding keeps the entries it has for those resources
// (KeepBound): a resource statusfold may not read is not a resource without objects.
func readableCondition(n notReadable) *controlv1alpha1.BindingPolicyCondition {
	if len(n) == 0 {
		return nil
	}
	grs := slices.SortedFunc(maps.Keys(n), func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	reasons := map[string]bool{}
	var parts []string
	for _, gr := range grs {
		reasons[n[gr].Reason] = true
		parts = append(parts, n[gr].Error())
	}
	reason := "NotReadable"
	if len(reasons) == 1 {
		reason = n[grs[0]].Reason
	}
	return &controlv1alpha1.BindingPolicyCondition{Type: controlv1alpha1.ConditionResourcesReadable, Status: corev1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf("%s; the Binding keeps the entries it has for them and gets no new ones until they can be read",
			strings.Join(parts, "; "))}
}

// withoutCondition returns conds without the condition of type t, and whether it was there.
func withoutCondition(conds []controlv1alpha1.BindingPolicyCondition, t controlv1alpha1.ConditionType) ([]controlv1alpha1.BindingPolicyCondition, bool) {
	out := slices.DeleteFunc(slices.Clone(conds), func(c controlv1alpha1.BindingPolicyCondition) bool { return c.Type == t })
	return out, len(out) != len(conds)
}

// policyCollectors is the sorted set of collector names the policy's clauses reference.
func policyCollectors(bp *controlv1alpha1.BindingPolicy) []string {
	var names []string
	for _, c := range bp.Spec.Downsync {
		names = append(names, c.StatusCollectors...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// collectorsCondition is StatusCollectorsAvailable for a set of referenced collectors.
func (r *Reconciler) collectorsCondition(ctx context.Context, names []string) controlv1alpha1.BindingPolicyCondition {
	var missing, invalid []string
	for _, n := range names {
		var sc controlv1alpha1.StatusCollector
		if err := r.cache.Get(ctx, client.ObjectKey{Name: n}, &sc); err != nil {
			missing = append(missing, n)
			continue
		}
		if _, errs, _ := r.compiler.Compile(&sc); len(errs) > 0 {
			invalid = append(invalid, n)
		}
	}
	cond := controlv1alpha1.BindingPolicyCondition{Type: controlv1alpha1.ConditionStatusCollectorsAvailable, Status: corev1.ConditionTrue, Reason: "AllAvailable",
		Message: "every referenced StatusCollector exists and is valid"}
	if len(missing)+len(invalid) > 0 {
		cond.Status, cond.Reason = corev1.ConditionFalse, "CollectorsUnavailable"
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing: "+strings.Join(missing, ", "))
		}
		if len(invalid) > 0 {
			parts = append(parts, "invalid: "+strings.Join(invalid, ", "))
		}
		cond.Message = strings.Join(parts, "; ")
	}
	return cond
}

// mergeConditions puts statusfold's conditions into conds (keeping others' conditions):
// StatusCollectorsAvailable always, ResourcesReadable when given, removed when not. It reports
// whether anything but timestamps changed.
func mergeConditions(conds, ours []controlv1alpha1.BindingPolicyCondition) ([]controlv1alpha1.BindingPolicyCondition, bool) {
	changedAny := false
	if !slices.ContainsFunc(ours, func(c controlv1alpha1.BindingPolicyCondition) bool {
		return c.Type == controlv1alpha1.ConditionResourcesReadable
	}) {
		conds, changedAny = withoutCondition(conds, controlv1alpha1.ConditionResourcesReadable)
	}
	for _, c := range ours {
		var changed bool
		conds, changed = mergeCondition(conds, c)
		changedAny = changedAny || changed
	}
	return conds, changedAny
}

// mergeCondition puts cond into conds (keeping others' conditions), keeping the transition time
// when the status did not change. It reports whether anything but timestamps changed.
func mergeCondition(conds []controlv1alpha1.BindingPolicyCondition, cond controlv1alpha1.BindingPolicyCondition) ([]controlv1alpha1.BindingPolicyCondition, bool) {
	now := metav1.Now()
	cond.LastTransitionTime = now
	out := slices.Clone(conds)
	i := slices.IndexFunc(out, func(c controlv1alpha1.BindingPolicyCondition) bool { return c.Type == cond.Type })
	if i < 0 {
		return append(out, cond), true
	}
	old := out[i]
	if old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	changed := old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message
	if !changed {
		return out, false
	}
	out[i] = cond
	return out, true
}

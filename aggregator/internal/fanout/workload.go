package fanout

import (
	"context"
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// statusOnly reports whether an update changed at most the object's status (and metadata that
// nothing delivers to a WEC: resourceVersion, managedFields, labels — which the caller looks at):
// a kind with a status subresource, whose generation counts every other change, the same object
// (UID: not deleted and created again between two events) at the same generation with the same
// annotations.
func statusOnly(info resources.ResourceInfo, o, n client.Object) bool {
	return info.HasStatus && o != nil && n != nil && o.GetUID() == n.GetUID() && n.GetGeneration() > 0 &&
		o.GetGeneration() == n.GetGeneration() && maps.Equal(o.GetAnnotations(), n.GetAnnotations())
}

// onWorkload: a workload object changed: the policies that may select it, and the object itself.
// Selection depends only on the object's existence, namespace, name and labels; an update that
// changes none of them (a status write, statusfold's own included), or only the status-return
// labels statusfold maintains (rules.ReturnLabels: the executing count changes with the WECs that
// report) while no BindingPolicy's objectSelectors name them, changes only the
// resourceVersion the Bindings record, so it re-resolves only the policies whose Binding lists the
// object, after versionRefresh (ownVersionRefresh for a status-only change — statusfold's own status
// return, or KubeStellar's — which changes nothing a Binding's consumer delivers to a WEC):
// the updates of that delay coalesce into one Binding write per policy (Bindings list
// resourceVersions: docs/rules.md "Bindings"), instead of one per update. A queued refresh is never
// postponed: the earliest wins. Until the longer delay has passed, the Bindings keep the version
// they list through any other reconcile of their policies (echo.Holds).
func (h *Handlers) onWorkload(info resources.ResourceInfo) func(o, n client.Object) {
	return func(o, n client.Object) {
		obj := n
		if obj == nil {
			obj = o
		}
		if obj == nil {
			return
		}
		key := rules.ObjectKey{Group: info.GVR.Group, Resource: info.GVR.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		refresh := h.versionRefresh
		switch {
		case n == nil:
			h.ownWrites.Forget(key.String())
			h.objects.Add(key)
		case o == nil && !h.mayHaveOutputs(key, n):
			// A new object that no Binding lists and that carries no return label: nothing of
			// statusfold's to write or remove for it (a Binding that lists it later queues it).
		case h.ownWrites.Seen(key.String(), n.GetResourceVersion(), func() { h.objects.Add(key) }):
			// The echo of statusfold's own status return. (One that arrives before the return's
			// answer is held by echo.OwnWrites, and takes the shorter refresh below.) For a kind
			// with a status subresource the return changes neither generation nor annotations,
			// so an echo that does was preceded by another writer's change (two writes between
			// events, after a watch gap): statusOnly below decides.
			if !info.HasStatus {
				refresh = h.ownVersionRefresh
			}
		}
		if statusOnly(info, o, n) {
			refresh = h.ownVersionRefresh
		}
		if o == nil || n == nil {
			h.holds.Release(key) // created or deleted
		}
		if !h.internal {
			return
		}
		ctx := context.Background()
		if o != nil && n != nil && (maps.Equal(o.GetLabels(), n.GetLabels()) ||
			rules.OnlyReturnLabelsChanged(o.GetLabels(), n.GetLabels()) && !h.policiesSelectOn(ctx, rules.ReturnLabels)) {
			if o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync
			}
			bindings, err := index.BindingsListing(ctx, h.wds, key)
			if err != nil {
				h.holds.Release(key)
				return
			}
			if len(bindings) > 0 && statusOnly(info, o, n) {
				h.holds.Quiet(key, o.GetResourceVersion())
			} else {
				h.holds.Release(key)
			}
			for i := range bindings {
				h.policies.AddAfter(bindings[i].Name, refresh)
			}
			return
		}
		h.holds.Release(key)
		var list controlv1alpha1.BindingPolicyList
		if err := h.wds.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			if slices.ContainsFunc(list.Items[i].Spec.Downsync, func(c controlv1alpha1.DownsyncPolicyClause) bool {
				return rules.ClauseWantsResource(&c.DownsyncObjectTest, info.GVR.GroupResource())
			}) {
				h.policies.Add(list.Items[i].Name)
			}
		}
	}
}

// mayHaveOutputs reports whether the object obj (key) can have something of statusfold's to
// write or remove: a Binding lists it, or it carries one of the status-return labels (statusfold
// sets executing-count with every status it returns; KubeStellar the same). Its CombinedStatus
// objects queue it on their own events, and a Binding that lists it later queues it too
// (rules.ChangedBound), so an object for which this is false needs no evaluation when it appears: at
// start, with policies that select by labels only (every resource watched), that is every
// Namespace, ManagedCluster, ClusterRole… of the WDS. True when the Bindings cannot be read.
func (h *Handlers) mayHaveOutputs(key rules.ObjectKey, obj client.Object) bool {
	labels := obj.GetLabels()
	if slices.ContainsFunc(rules.ReturnLabels, func(l string) bool { _, ok := labels[l]; return ok }) {
		return true
	}
	bindings, err := index.BindingsListing(context.Background(), h.wds, key)
	return err != nil || len(bindings) > 0
}

// policiesSelectOn reports whether some BindingPolicy's objectSelectors name one of keys (in
// matchLabels or matchExpressions); true when the policies cannot be read, so that an update is
// then treated as one that may change selection.
func (h *Handlers) policiesSelectOn(ctx context.Context, keys []string) bool {
	var list controlv1alpha1.BindingPolicyList
	if err := h.wds.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return true
	}
	for i := range list.Items {
		for _, c := range list.Items[i].Spec.Downsync {
			if rules.SelectorsName(c.ObjectSelectors, keys) {
				return true
			}
		}
	}
	return false
}

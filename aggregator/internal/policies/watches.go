package policies

import (
	"context"
	"slices"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// policyScope reports whether some clause of bp can select objects of info, and in which
// namespaces: those the clauses name when every clause that wants info names them, else all.
func policyScope(bp *controlv1alpha1.BindingPolicy, info resources.ResourceInfo) (resources.Scope, bool) {
	var scope resources.Scope
	wants := false
	for i := range bp.Spec.Downsync {
		t := &bp.Spec.Downsync[i].DownsyncObjectTest
		if !rules.ClauseWantsResource(t, info.GVR.GroupResource()) {
			continue
		}
		wants = true
		if ns, all := rules.ClauseNamespaces(t); all || !info.Namespaced {
			scope = resources.AllNamespaces()
		} else {
			scope = scope.Union(resources.InNamespaces(ns...))
		}
	}
	return scope, wants
}

// specChanged reports whether bp's generation differs from the one of its previous successful
// reconcile (false the first time: informers start only as wide as policies need).
func (r *Reconciler) specChanged(bp *controlv1alpha1.BindingPolicy) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.generations == nil {
		r.generations = map[string]int64{}
	}
	prev, seen := r.generations[bp.Name]
	r.generations[bp.Name] = bp.Generation
	return seen && prev != bp.Generation
}

// pruneWatches narrows the informers of workload resources to what policies can select and
// Bindings list: a resource neither needs is not watched any more (e.g. after a `"*"` policy is
// deleted), and one that every clause selecting it limits to named namespaces is watched in
// those (and in the namespaces of the objects Bindings list) only. The Binding named name is
// taken as just written (nil: deleted), not as the cache may still hold it.
func (r *Reconciler) pruneWatches(ctx context.Context, name string, written *controlv1alpha1.Binding) error {
	wanted := map[string]resources.Scope{}
	var bl controlv1alpha1.BindingList
	if err := r.cache.List(ctx, &bl); err != nil {
		return err
	}
	bindings := slices.DeleteFunc(bl.Items, func(b controlv1alpha1.Binding) bool { return b.Name == name })
	if written != nil {
		bindings = append(bindings, *written)
	}
	for i := range bindings {
		for _, bo := range rules.BoundObjects(&bindings[i].Spec) {
			info, ok, err := r.catalog.Lookup(bo.GVR.GroupResource())
			if err != nil {
				return nil // uncertain: stop no watch now
			}
			if ok {
				scope := resources.InNamespaces(bo.Namespace)
				if !info.Namespaced {
					scope = resources.AllNamespaces()
				}
				wanted[info.GVR.String()] = wanted[info.GVR.String()].Union(scope)
			}
		}
	}
	var pl controlv1alpha1.BindingPolicyList
	if err := r.cache.List(ctx, &pl); err != nil {
		return err
	}
	resources := r.catalog.Resources(false)
	if r.internal {
		for i := range pl.Items {
			for _, info := range resources {
				if scope, ok := policyScope(&pl.Items[i], info); ok {
					wanted[info.GVR.String()] = wanted[info.GVR.String()].Union(scope)
				}
			}
		}
	}
	narrowed, err := r.watches.StopExcept(ctx, resources, wanted)
	for _, n := range narrowed {
		// No delete event will come for the objects the informers stopped covering.
		if n.Kept.Empty() {
			r.ownWrites.ForgetResource(n.Info.GVR.GroupResource())
		} else {
			r.ownWrites.ForgetResourceOutside(n.Info.GVR.GroupResource(), n.Kept.Covers)
		}
	}
	return err
}

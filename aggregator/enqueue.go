package aggregator

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// Queueing work in bulk: at start (the controllers' atStart sources) and when a change can affect
// many keys (an inventory label, an AggregationPolicy).

func (a *Aggregator) enqueueAllPolicies(ctx context.Context) {
	var list controlv1alpha1.BindingPolicyList
	if err := a.wdsCache.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		a.policies.Add(list.Items[i].Name)
	}
	if a.opts.BindingResolution == BindingResolutionExternal {
		a.enqueueBoundOf(ctx, "", true)
		return
	}
	// Bindings whose policy is gone are deleted by the policy's reconcile.
	var bl controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bl); err != nil {
		return
	}
	for i := range bl.Items {
		a.policies.Add(bl.Items[i].Name)
	}
}

func (a *Aggregator) enqueueAllKinds(ctx context.Context) {
	var scs controlv1alpha1.StatusCollectorList
	if err := a.wdsCache.List(ctx, &scs); err == nil {
		for i := range scs.Items {
			a.kinds.Add(rules.KindKey{Kind: rules.KindStatusCollector, Name: scs.Items[i].Name})
		}
	}
	var ccs controlv1alpha1.ContentClassifierList
	if err := a.wdsCache.List(ctx, &ccs); err == nil {
		for i := range ccs.Items {
			a.kinds.Add(rules.KindKey{Kind: rules.KindContentClassifier, Name: ccs.Items[i].Name})
		}
	}
	if a.servesAggregationPolicies() {
		var aps policyv1alpha1.AggregationPolicyList
		if err := a.wdsCache.List(ctx, &aps); err == nil {
			for i := range aps.Items {
				a.kinds.Add(rules.KindKey{Kind: rules.KindAggregationPolicy, Name: aps.Items[i].Name})
			}
		}
	}
}

// enqueueBoundOf queues every bound object of an API group (all: of every group).
func (a *Aggregator) enqueueBoundOf(ctx context.Context, group string, all bool) {
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		for _, bo := range rules.BoundObjects(&bindings.Items[i].Spec) {
			if all || bo.GVR.Group == group {
				a.objects.Add(bo.Key())
			}
		}
	}
}

func (a *Aggregator) enqueueBound(spec *controlv1alpha1.BindingSpec) {
	for _, bo := range rules.BoundObjects(spec) {
		a.objects.Add(bo.Key())
	}
}

// enqueueLabelled queues every object that carries statusfold's executing-count label, whatever
// its resource, so that returns whose Binding disappeared while no manager ran are cleared.
func (a *Aggregator) enqueueLabelled(ctx context.Context) {
	for _, info := range a.catalog.Resources(false) {
		if rules.NeverWritten[info.GVR.GroupResource()] {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(info.GVR.GroupVersion().WithKind(info.Kind + "List"))
		if err := a.live.List(ctx, list, client.HasLabels{rules.LabelExecutingCount}); err != nil {
			continue
		}
		for _, o := range list.Items {
			k := rules.ObjectKey{Group: info.GVR.Group, Resource: info.GVR.Resource, Namespace: o.Namespace, Name: o.Name}
			a.orphans.Store(k, struct{}{})
			a.objects.Add(k)
		}
	}
}

package fanout

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// Queueing work in bulk: at start (the controllers' controllers.AtStart sources) and when a change can affect
// many keys (an inventory label, an AggregationPolicy).

func (h *Handlers) EnqueueAllPolicies(ctx context.Context) {
	var list controlv1alpha1.BindingPolicyList
	if err := h.wds.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		h.policies.Add(list.Items[i].Name)
	}
	if !h.internal {
		h.EnqueueBoundOf(ctx, "", true)
		return
	}
	// Bindings whose policy is gone are deleted by the policy's reconcile.
	var bl controlv1alpha1.BindingList
	if err := h.wds.List(ctx, &bl); err != nil {
		return
	}
	for i := range bl.Items {
		h.policies.Add(bl.Items[i].Name)
	}
}

func (h *Handlers) EnqueueAllKinds(ctx context.Context) {
	var scs controlv1alpha1.StatusCollectorList
	if err := h.wds.List(ctx, &scs); err == nil {
		for i := range scs.Items {
			h.kinds.Add(rules.KindKey{Kind: rules.KindStatusCollector, Name: scs.Items[i].Name})
		}
	}
	var ccs controlv1alpha1.ContentClassifierList
	if err := h.wds.List(ctx, &ccs); err == nil {
		for i := range ccs.Items {
			h.kinds.Add(rules.KindKey{Kind: rules.KindContentClassifier, Name: ccs.Items[i].Name})
		}
	}
	if h.servesAggregationPolicies() {
		var aps policyv1alpha1.AggregationPolicyList
		if err := h.wds.List(ctx, &aps); err == nil {
			for i := range aps.Items {
				h.kinds.Add(rules.KindKey{Kind: rules.KindAggregationPolicy, Name: aps.Items[i].Name})
			}
		}
	}
}

// EnqueueBoundOf queues every bound object of an API group (all: of every group).
func (h *Handlers) EnqueueBoundOf(ctx context.Context, group string, all bool) {
	var bindings controlv1alpha1.BindingList
	if err := h.wds.List(ctx, &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		for _, bo := range rules.BoundObjects(&bindings.Items[i].Spec) {
			if all || bo.GVR.Group == group {
				h.objects.Add(bo.Key())
			}
		}
	}
}

func (h *Handlers) enqueueBound(spec *controlv1alpha1.BindingSpec) {
	for _, bo := range rules.BoundObjects(spec) {
		h.objects.Add(bo.Key())
	}
}

// EnqueueLabelled queues every object that carries statusfold's executing-count label, whatever
// its resource, so that returns whose Binding disappeared while no manager ran are cleared.
func (h *Handlers) EnqueueLabelled(ctx context.Context) {
	for _, info := range h.catalog.Resources(false) {
		if rules.NeverWritten[info.GVR.GroupResource()] {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(info.GVR.GroupVersion().WithKind(info.Kind + "List"))
		if err := h.live.List(ctx, list, client.HasLabels{rules.LabelExecutingCount}); err != nil {
			continue
		}
		for _, o := range list.Items {
			k := rules.ObjectKey{Group: info.GVR.Group, Resource: info.GVR.Resource, Namespace: o.Namespace, Name: o.Name}
			h.orphans.Store(k, struct{}{})
			h.objects.Add(k)
		}
	}
}

// GroupRecovered re-evaluates, at once, the bound objects of a group whose discovery works
// again, and re-resolves the policies: their work failed while the group was down and waits in
// exponential backoff, which by then can be longer than the outage was.
func (h *Handlers) GroupRecovered(group string) {
	h.log.Info("API group discovery works again; re-evaluating its objects", "group", group)
	ctx := context.Background()
	h.EnqueueBoundOf(ctx, group, false)
	h.EnqueueAllPolicies(ctx)
}

package fanout

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// handlerFuncs adapts one function, called with the old and new object (either may be nil), to an
// informer event handler. A panic in f is recovered (recoverEvent) instead of ending the process:
// one object that breaks a handler must not stop the manager for every other.
func (h *Handlers) handlerFuncs(f func(oldObj, newObj client.Object)) toolscache.ResourceEventHandlerFuncs {
	guarded := func(o, n client.Object) {
		defer h.recoverEvent(o, n)
		f(o, n)
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { guarded(nil, asObject(o)) },
		UpdateFunc: func(o, n any) { guarded(asObject(o), asObject(n)) },
		DeleteFunc: func(o any) { guarded(asObject(o), nil) },
	}
}

// recoverEvent, deferred by an event handler, recovers its panic: logged with its stack at default
// verbosity and counted (statusfold_errors_total{where="panic"}). The event's work is left to the
// object's next event, at the latest the cache's periodic resync.
func (h *Handlers) recoverEvent(o, n client.Object) {
	p := recover()
	if p == nil {
		return
	}
	if h.metrics != nil {
		h.metrics.Errors.WithLabelValues("panic").Inc()
	}
	obj, name := n, ""
	if obj == nil {
		obj = o
	}
	if obj != nil {
		name = fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
	}
	h.log.Error(fmt.Errorf("panic: %v", p), "recovered from a panic in an event handler; the event is dropped",
		"object", name, "stack", string(debug.Stack()))
}

func asObject(o any) client.Object {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, _ := o.(client.Object)
	return obj
}

func (h *Handlers) addHandler(ctx context.Context, c cache.Cache, obj client.Object, f func(oldObj, newObj client.Object)) (toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	return inf.AddEventHandler(h.handlerFuncs(f))
}

// RegisterHandlers connects every watched kind to the work queues. Every informer starts before
// any is waited for, so the initial lists run together. It returns the handlers' registrations:
// when all have synced, every handler has been given its informer's initial list, and the WEC
// index is complete.
func (h *Handlers) RegisterHandlers(ctx context.Context) ([]toolscache.ResourceEventHandlerRegistration, error) {
	wds, its := h.wds, h.its
	type registration struct {
		c   cache.Cache
		obj client.Object
		f   func(o, n client.Object)
	}
	regs := []registration{
		{its, &controlv1alpha1.WorkStatus{}, h.onWorkStatus},
		{its, &clusterv1.ManagedCluster{}, h.onCluster},
		{wds, &controlv1alpha1.Binding{}, h.onBinding},
		{wds, &controlv1alpha1.BindingPolicy{}, func(o, n client.Object) { h.policies.Add(nameOf(o, n)) }},
		{wds, &controlv1alpha1.StatusCollector{}, h.onCollector},
		{wds, &controlv1alpha1.ContentClassifier{}, h.onClassifier},
		{wds, &controlv1alpha1.CombinedStatus{}, h.onCombinedStatus},
		{wds, &corev1.Namespace{}, h.onNamespace},
	}
	if h.servesAggregationPolicies() {
		regs = append(regs, registration{wds, &policyv1alpha1.AggregationPolicy{}, h.onAggregationPolicy})
	}
	var synced []toolscache.ResourceEventHandlerRegistration
	for _, r := range regs {
		reg, err := h.addHandler(ctx, r.c, r.obj, r.f)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg)
	}
	return synced, nil
}

// onAggregationPolicy: the policy's status, the engine's modules, and every bound object of the
// policy's target group (the engine decides per kind).
func (h *Handlers) onAggregationPolicy(o, n client.Object) {
	h.kinds.Add(rules.KindKey{Kind: rules.KindAggregationPolicy, Name: nameOf(o, n)})
}

func nameOf(o, n client.Object) string {
	if n != nil {
		return n.GetName()
	}
	if o != nil {
		return o.GetName()
	}
	return ""
}

func (h *Handlers) onWorkStatus(o, n client.Object) {
	now := time.Now()
	if o != nil && n == nil {
		h.reports.Forget(o.GetUID())
	}
	ows, _ := o.(*controlv1alpha1.WorkStatus)
	nws, _ := n.(*controlv1alpha1.WorkStatus)
	h.wecs.Update(ows, nws)
	if nws != nil && (ows == nil || ows.ResourceVersion != nws.ResourceVersion) {
		h.oversize(nws)
	}
	for _, obj := range []client.Object{o, n} {
		if ws, ok := obj.(*controlv1alpha1.WorkStatus); ok {
			k := rules.WorkStatusObject(ws)
			h.pending.Mark(k, now)
			h.addFromWEC(k, ws.Namespace) // the mailbox namespace: the WEC
		}
	}
}

// onCluster: a cluster's labels decide policy destinations and feed collectors (inventory.labels).
func (h *Handlers) onCluster(o, n client.Object) {
	if o != nil && n != nil && maps.Equal(o.GetLabels(), n.GetLabels()) {
		return
	}
	h.clusterGen.Add(1)
	ctx := context.Background()
	h.EnqueueAllPolicies(ctx)
	var bindings controlv1alpha1.BindingList
	if err := h.wds.List(ctx, &bindings); err != nil {
		return
	}
	name := nameOf(o, n)
	for i := range bindings.Items {
		b := &bindings.Items[i]
		for _, d := range b.Spec.Destinations {
			if d.ClusterId == name {
				h.enqueueBound(&b.Spec)
				break
			}
		}
	}
}

// onBinding: every object that is or was in the binding is re-evaluated; the policy's conditions
// follow the binding.
func (h *Handlers) onBinding(o, n client.Object) {
	ob, _ := o.(*controlv1alpha1.Binding)
	nb, _ := n.(*controlv1alpha1.Binding)
	if ob != nil && nb == nil {
		h.dests.Forget(ob.UID)
	}
	for _, k := range rules.ChangedBound(ob, nb) {
		h.objects.Add(k)
	}
	name := nameOf(o, n)
	if nb != nil && ob != nil {
		// statusfold's own write is dropped: its reconcile already wrote the status it implies.
		h.ownWrites.Seen(echo.BindingWriteKey(nb.Name), nb.ResourceVersion, func() { h.policies.Add(name) })
		return
	}
	if ob != nil && nb == nil {
		h.ownWrites.Forget(echo.BindingWriteKey(ob.Name))
	}
	h.policies.Add(name)
}

// onCollector: the collector's status, the objects whose bindings reference it, and the
// conditions of those bindings' policies. An update that leaves the spec as it was (its status,
// statusfold's own write included, or its metadata) changes no evaluation: only the status is
// looked at again.
func (h *Handlers) onCollector(o, n client.Object) {
	name := nameOf(o, n)
	h.kinds.Add(rules.KindKey{Kind: rules.KindStatusCollector, Name: name})
	if sameSpec(o, n) {
		return
	}
	var bindings controlv1alpha1.BindingList
	if err := h.wds.List(context.Background(), &bindings, client.MatchingFields{index.IndexBindingCollectors: name}); err != nil {
		return
	}
	for i := range bindings.Items {
		h.enqueueBound(&bindings.Items[i].Spec)
		h.policies.Add(bindings.Items[i].Name)
	}
}

// onClassifier: the classifier's status and every bound object of its resource. An update that
// leaves the spec as it was changes no evaluation (the pruner is made from the spec alone).
func (h *Handlers) onClassifier(o, n client.Object) {
	name := nameOf(o, n)
	h.kinds.Add(rules.KindKey{Kind: rules.KindContentClassifier, Name: name})
	if sameSpec(o, n) {
		return
	}
	h.pruners.Forget(name)
	var bindings controlv1alpha1.BindingList
	if err := h.wds.List(context.Background(), &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		for _, bo := range rules.BoundObjects(&bindings.Items[i].Spec) {
			if rules.ClassifierName(bo.GVR) == name {
				h.objects.Add(bo.Key())
			}
		}
	}
}

// sameSpec reports whether an update (both o and n present) left the spec of an object of a kind
// with a status subresource as it was: the same UID and generation (the apiserver counts every
// spec change in metadata.generation, and nothing else).
func sameSpec(o, n client.Object) bool {
	return o != nil && n != nil && o.GetUID() == n.GetUID() && o.GetGeneration() == n.GetGeneration()
}

// onCombinedStatus: a CombinedStatus changed or deleted by someone else is put back. The echo of
// statusfold's own write is skipped.
func (h *Handlers) onCombinedStatus(o, n client.Object) {
	putBack := func() {
		for _, obj := range []client.Object{o, n} {
			if obj == nil {
				continue
			}
			if k, ok := rules.CombinedStatusObject(obj); ok {
				h.objects.Add(k)
			}
		}
	}
	if n != nil {
		h.ownWrites.Seen(echo.CombinedStatusWriteKey(n.GetNamespace(), n.GetName()), n.GetResourceVersion(), putBack)
		return
	}
	if o != nil {
		h.ownWrites.Forget(echo.CombinedStatusWriteKey(o.GetNamespace(), o.GetName()))
	}
	putBack()
}

// onNamespace: namespace labels feed namespaceSelectors.
func (h *Handlers) onNamespace(o, n client.Object) {
	if o != nil && n != nil && maps.Equal(o.GetLabels(), n.GetLabels()) {
		return
	}
	h.EnqueueAllPolicies(context.Background())
}

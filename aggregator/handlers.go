package aggregator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// kindKey is a work item for one of statusfold's own objects whose status it maintains.
type kindKey struct {
	Kind string // StatusCollector, ContentClassifier
	Name string
}

const (
	kindStatusCollector   = "StatusCollector"
	kindContentClassifier = "ContentClassifier"
	kindAggregationPolicy = "AggregationPolicy"
)

// handlerFuncs adapts one function, called with the old and new object (either may be nil), to an
// informer event handler.
func handlerFuncs(f func(oldObj, newObj client.Object)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f(nil, asObject(o)) },
		UpdateFunc: func(o, n any) { f(asObject(o), asObject(n)) },
		DeleteFunc: func(o any) { f(asObject(o), nil) },
	}
}

func asObject(o any) client.Object {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, _ := o.(client.Object)
	return obj
}

// addHandler connects f to the informer of obj's kind, starting it if needed; it does not wait for
// the informer's initial list (see waitSynced).
func addHandler(ctx context.Context, c cache.Cache, obj client.Object, f func(oldObj, newObj client.Object)) (toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	return inf.AddEventHandler(handlerFuncs(f))
}

// registerHandlers connects every watched kind to the work queues. It returns when every
// handler has been given its informer's initial list: the WEC index is then complete.
func (a *Aggregator) registerHandlers(ctx context.Context) error {
	wds, its := a.wdsCache, a.its.GetCache()
	regs := []struct {
		c   cache.Cache
		obj client.Object
		f   func(o, n client.Object)
	}{
		{its, &controlv1alpha1.WorkStatus{}, a.onWorkStatus},
		{its, &clusterv1.ManagedCluster{}, a.onCluster},
		{wds, &controlv1alpha1.Binding{}, a.onBinding},
		{wds, &controlv1alpha1.BindingPolicy{}, func(o, n client.Object) { a.policies.Add(nameOf(o, n)) }},
		{wds, &controlv1alpha1.StatusCollector{}, a.onCollector},
		{wds, &controlv1alpha1.ContentClassifier{}, a.onClassifier},
		{wds, &controlv1alpha1.CombinedStatus{}, a.onCombinedStatus},
		{wds, &corev1.Namespace{}, a.onNamespace},
	}
	// AggregationPolicy is statusfold's own kind: watched only where its CRD is installed.
	if _, err := a.mapper.RESTMapping(policyv1alpha1.GroupVersion.WithKind(kindAggregationPolicy).GroupKind()); err == nil {
		regs = append(regs, struct {
			c   cache.Cache
			obj client.Object
			f   func(o, n client.Object)
		}{wds, &policyv1alpha1.AggregationPolicy{}, a.onAggregationPolicy})
		a.aggregationPolicies = true
	} else {
		a.log.Info("AggregationPolicy kind not served: built-in aggregation modules only", "reason", err.Error())
	}
	// Every informer starts before any is waited for, so the initial lists run together.
	var synced []toolscache.ResourceEventHandlerRegistration
	for _, r := range regs {
		reg, err := addHandler(ctx, r.c, r.obj, r.f)
		if err != nil {
			return err
		}
		synced = append(synced, reg)
	}
	if !waitSynced(ctx, synced...) {
		return errors.New("aggregator: event handlers did not sync")
	}
	return nil
}

// waitSynced waits until every registration has been given its informer's initial list, or ctx
// ends; it reports whether all were. Unlike toolscache.WaitForCacheSync it does not poll (that
// adds up to 100 ms per wait).
func waitSynced(ctx context.Context, regs ...toolscache.ResourceEventHandlerRegistration) bool {
	for _, r := range regs {
		select {
		case <-r.HasSyncedChecker().Done():
		case <-ctx.Done():
			if !toolscache.IsDone(r.HasSyncedChecker()) {
				return false
			}
		}
	}
	return true
}

// onAggregationPolicy: the policy's status, the engine's modules, and every bound object of the
// policy's target group (the engine decides per kind).
func (a *Aggregator) onAggregationPolicy(o, n client.Object) {
	a.kinds.Add(kindKey{Kind: kindAggregationPolicy, Name: nameOf(o, n)})
}

// enqueueGroup queues every bound object of an API group.
func (a *Aggregator) enqueueGroup(ctx context.Context, group string) {
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		for _, bo := range BoundObjects(&bindings.Items[i].Spec) {
			if bo.GVR.Group == group {
				a.objects.Add(bo.Key())
			}
		}
	}
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

func (a *Aggregator) onWorkStatus(o, n client.Object) {
	now := time.Now()
	if o != nil && n == nil {
		a.reports.forget(o.GetUID())
	}
	ows, _ := o.(*controlv1alpha1.WorkStatus)
	nws, _ := n.(*controlv1alpha1.WorkStatus)
	a.wecs.update(ows, nws)
	for _, obj := range []client.Object{o, n} {
		if ws, ok := obj.(*controlv1alpha1.WorkStatus); ok {
			k := WorkStatusObject(ws)
			a.pending.mark(k, now)
			a.objects.Add(k)
		}
	}
}

// onCluster: a cluster's labels decide policy destinations and feed collectors (inventory.labels).
func (a *Aggregator) onCluster(o, n client.Object) {
	if o != nil && n != nil && maps.Equal(o.GetLabels(), n.GetLabels()) {
		return
	}
	a.clusterGen.Add(1)
	ctx := context.Background()
	a.enqueueAllPolicies(ctx)
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bindings); err != nil {
		return
	}
	name := nameOf(o, n)
	for i := range bindings.Items {
		b := &bindings.Items[i]
		for _, d := range b.Spec.Destinations {
			if d.ClusterId == name {
				a.enqueueBound(&b.Spec)
				break
			}
		}
	}
}

// onBinding: every object that is or was in the binding is re-evaluated; the policy's conditions
// follow the binding.
func (a *Aggregator) onBinding(o, n client.Object) {
	ob, _ := o.(*controlv1alpha1.Binding)
	nb, _ := n.(*controlv1alpha1.Binding)
	if ob != nil && nb == nil {
		a.dests.forget(ob.UID)
	}
	for _, k := range changedBound(ob, nb) {
		a.objects.Add(k)
	}
	a.policies.Add(nameOf(o, n))
}

// changedBound lists the objects whose evaluation a Binding change can affect: all of them when
// the destinations changed (or the Binding appeared or went), else those added, removed, or with
// another modulation. A new resourceVersion alone changes nothing (the object's own event covers
// it), so a status write does not fan out to every object of the Binding.
func changedBound(o, n *controlv1alpha1.Binding) []ObjectKey {
	if o == nil || n == nil || !slices.Equal(o.Spec.Destinations, n.Spec.Destinations) {
		var keys []ObjectKey
		for _, b := range []*controlv1alpha1.Binding{o, n} {
			if b != nil {
				for _, bo := range BoundObjects(&b.Spec) {
					keys = append(keys, bo.Key())
				}
			}
		}
		return keys
	}
	type entry struct {
		version string
		mod     controlv1alpha1.DownsyncModulation
	}
	index := func(b *controlv1alpha1.Binding) map[ObjectKey]entry {
		m := map[ObjectKey]entry{}
		for _, bo := range BoundObjects(&b.Spec) {
			m[bo.Key()] = entry{bo.GVR.Version, bo.Modulation}
		}
		return m
	}
	oi, ni := index(o), index(n)
	var keys []ObjectKey
	for k, oe := range oi {
		ne, ok := ni[k]
		if !ok || ne.version != oe.version || !equality.Semantic.DeepEqual(ne.mod, oe.mod) {
			keys = append(keys, k)
		}
	}
	for k := range ni {
		if _, ok := oi[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func (a *Aggregator) enqueueBound(spec *controlv1alpha1.BindingSpec) {
	for _, bo := range BoundObjects(spec) {
		a.objects.Add(bo.Key())
	}
}

// onCollector: the collector's status, the objects whose bindings reference it, and the
// conditions of those bindings' policies.
func (a *Aggregator) onCollector(o, n client.Object) {
	name := nameOf(o, n)
	a.kinds.Add(kindKey{Kind: kindStatusCollector, Name: name})
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(context.Background(), &bindings, client.MatchingFields{indexBindingCollectors: name}); err != nil {
		return
	}
	for i := range bindings.Items {
		a.enqueueBound(&bindings.Items[i].Spec)
		a.policies.Add(bindings.Items[i].Name)
	}
}

// onClassifier: the classifier's status and every bound object of its resource.
func (a *Aggregator) onClassifier(o, n client.Object) {
	name := nameOf(o, n)
	a.pruners.forget(name)
	a.kinds.Add(kindKey{Kind: kindContentClassifier, Name: name})
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(context.Background(), &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		for _, bo := range BoundObjects(&bindings.Items[i].Spec) {
			if classifierName(bo.GVR) == name {
				a.objects.Add(bo.Key())
			}
		}
	}
}

// onCombinedStatus: a CombinedStatus changed or deleted by someone else is put back. The echo of
// statusfold's own write is skipped.
func (a *Aggregator) onCombinedStatus(o, n client.Object) {
	if n != nil {
		if a.ownWrites.echo(combinedStatusWriteKey(n.GetNamespace(), n.GetName()), n.GetResourceVersion()) {
			return
		}
	} else if o != nil {
		a.ownWrites.forget(combinedStatusWriteKey(o.GetNamespace(), o.GetName()))
	}
	for _, obj := range []client.Object{o, n} {
		if obj == nil {
			continue
		}
		if k, ok := combinedStatusObject(obj); ok {
			a.objects.Add(k)
		}
	}
}

// onNamespace: namespace labels feed namespaceSelectors.
func (a *Aggregator) onNamespace(o, n client.Object) {
	if o != nil && n != nil && maps.Equal(o.GetLabels(), n.GetLabels()) {
		return
	}
	a.enqueueAllPolicies(context.Background())
}

// DefaultVersionRefreshDelay is how long a Binding may list an object's previous resourceVersion
// after an update that cannot change which policies select the object.
const DefaultVersionRefreshDelay = 5 * time.Second

// onWorkload: a workload object changed: the policies that may select it, and the object itself.
// Selection depends only on the object's existence, namespace, name and labels; an update that
// changes none of them (a status write, statusfold's own included) changes only the
// resourceVersion the Bindings record, so it re-resolves only the policies whose Binding lists the
// object, after versionRefresh: the updates of that delay coalesce into one Binding write per
// policy (Bindings list resourceVersions: docs/rules.md "Bindings"), instead of one per update.
func (a *Aggregator) onWorkload(info resourceInfo) func(o, n client.Object) {
	return func(o, n client.Object) {
		obj := n
		if obj == nil {
			obj = o
		}
		if obj == nil {
			return
		}
		key := ObjectKey{Group: info.GVR.Group, Resource: info.GVR.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		switch {
		case n == nil:
			a.ownWrites.forget(key.String())
			a.objects.Add(key)
		case !a.ownWrites.echo(key.String(), n.GetResourceVersion()):
			a.objects.Add(key) // not the echo of statusfold's own status return
		}
		if a.opts.BindingResolution != BindingResolutionInternal {
			return
		}
		ctx := context.Background()
		if o != nil && n != nil && maps.Equal(o.GetLabels(), n.GetLabels()) {
			if o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync
			}
			var bl controlv1alpha1.BindingList
			if err := a.wdsCache.List(ctx, &bl, client.MatchingFields{indexBindingObjects: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
				return
			}
			for i := range bl.Items {
				a.policies.q.AddAfter(bl.Items[i].Name, a.versionRefresh)
			}
			return
		}
		var list controlv1alpha1.BindingPolicyList
		if err := a.wdsCache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			if slices.ContainsFunc(list.Items[i].Spec.Downsync, func(c controlv1alpha1.DownsyncPolicyClause) bool {
				return clauseWantsResource(&c.DownsyncObjectTest, info.GVR.GroupResource())
			}) {
				a.policies.Add(list.Items[i].Name)
			}
		}
	}
}

func (a *Aggregator) enqueueAllPolicies(ctx context.Context) {
	var list controlv1alpha1.BindingPolicyList
	if err := a.wdsCache.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		a.policies.Add(list.Items[i].Name)
	}
	if a.opts.BindingResolution == BindingResolutionExternal {
		a.enqueueAllBound(ctx)
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
			a.kinds.Add(kindKey{Kind: kindStatusCollector, Name: scs.Items[i].Name})
		}
	}
	var ccs controlv1alpha1.ContentClassifierList
	if err := a.wdsCache.List(ctx, &ccs); err == nil {
		for i := range ccs.Items {
			a.kinds.Add(kindKey{Kind: kindContentClassifier, Name: ccs.Items[i].Name})
		}
	}
	if a.aggregationPolicies {
		var aps policyv1alpha1.AggregationPolicyList
		if err := a.wdsCache.List(ctx, &aps); err == nil {
			for i := range aps.Items {
				a.kinds.Add(kindKey{Kind: kindAggregationPolicy, Name: aps.Items[i].Name})
			}
		}
	}
}

// ensureWatch starts (once) the informer of a workload resource, connects it, and waits at most
// Options.WatchSyncTimeout for its initial list. The wait is outside any lock: a resource whose
// list never succeeds (a conversion webhook down, an aggregated API failing) makes only the work
// that needs it fail — with an error naming it, retried with backoff — and stalls no other.
func (a *Aggregator) ensureWatch(ctx context.Context, info resourceInfo) error {
	return a.ensureWatches(ctx, []resourceInfo{info})[info.GVR.GroupResource()]
}

// ensureWatches is ensureWatch for several resources at once: every informer is started first and
// then all are waited for together, under one WatchSyncTimeout, so n resources cost the slowest
// initial list, not the sum of n waits. The result holds an error for each resource that is not
// watched and synced.
func (a *Aggregator) ensureWatches(ctx context.Context, infos []resourceInfo) map[schema.GroupResource]error {
	errs := map[schema.GroupResource]error{}
	regs := map[schema.GroupResource]toolscache.ResourceEventHandlerRegistration{}
	for _, info := range infos {
		reg, err := a.startWatch(ctx, info)
		if err != nil {
			errs[info.GVR.GroupResource()] = err
			continue
		}
		regs[info.GVR.GroupResource()] = reg
	}
	wctx, cancel := context.WithTimeout(ctx, a.opts.WatchSyncTimeout)
	defer cancel()
	for _, info := range infos {
		reg, ok := regs[info.GVR.GroupResource()]
		if !ok {
			continue
		}
		if !waitSynced(wctx, reg) {
			errs[info.GVR.GroupResource()] = fmt.Errorf("watch of %s: initial list not done after %s (does listing it fail?)", info.GVR, a.opts.WatchSyncTimeout)
		}
	}
	return errs
}

// startWatch starts (once) the informer of a workload resource and connects it; it does not wait.
func (a *Aggregator) startWatch(ctx context.Context, info resourceInfo) (toolscache.ResourceEventHandlerRegistration, error) {
	key := info.GVR.String()
	a.watchesMu.Lock()
	defer a.watchesMu.Unlock()
	if reg, ok := a.watches[key]; ok {
		return reg, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	inf, err := a.wdsCache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", key, err)
	}
	reg, err := inf.AddEventHandler(handlerFuncs(a.onWorkload(info)))
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", key, err)
	}
	a.watches[key] = reg
	a.log.V(1).Info("watching workload resource", "resource", key)
	return reg, nil
}

// watching reports whether the resource's informer runs and has listed its objects.
func (a *Aggregator) watching(info resourceInfo) bool {
	a.watchesMu.Lock()
	reg, ok := a.watches[info.GVR.String()]
	a.watchesMu.Unlock()
	return ok && reg.HasSynced()
}

// enqueueAllBound queues every object of every Binding.
func (a *Aggregator) enqueueAllBound(ctx context.Context) {
	var bindings controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bindings); err != nil {
		return
	}
	for i := range bindings.Items {
		a.enqueueBound(&bindings.Items[i].Spec)
	}
}

// pruneWatches stops the informers of workload resources that no policy can select and no
// Binding lists any more (e.g. after a `"*"` policy is deleted).
func (a *Aggregator) pruneWatches(ctx context.Context) error {
	wanted := map[string]bool{}
	var bl controlv1alpha1.BindingList
	if err := a.wdsCache.List(ctx, &bl); err != nil {
		return err
	}
	for i := range bl.Items {
		for _, bo := range BoundObjects(&bl.Items[i].Spec) {
			info, ok, err := a.catalog.lookup(bo.GVR.GroupResource())
			if err != nil {
				return nil // uncertain: stop no watch now
			}
			if ok {
				wanted[info.GVR.String()] = true
			}
		}
	}
	var pl controlv1alpha1.BindingPolicyList
	if err := a.wdsCache.List(ctx, &pl); err != nil {
		return err
	}
	resources := a.catalog.resources(false)
	if a.opts.BindingResolution == BindingResolutionInternal {
		for i := range pl.Items {
			for _, info := range resources {
				if slices.ContainsFunc(pl.Items[i].Spec.Downsync, func(c controlv1alpha1.DownsyncPolicyClause) bool {
					return clauseWantsResource(&c.DownsyncObjectTest, info.GVR.GroupResource())
				}) {
					wanted[info.GVR.String()] = true
				}
			}
		}
	}
	a.watchesMu.Lock()
	defer a.watchesMu.Unlock()
	for _, info := range resources {
		key := info.GVR.String()
		if _, ok := a.watches[key]; !ok || wanted[key] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(info.GVK())
		if err := a.wdsCache.RemoveInformer(ctx, u); err != nil {
			return err
		}
		delete(a.watches, key)
		a.ownWrites.forgetResource(info.GVR.GroupResource())
		a.log.V(1).Info("stopped watching workload resource", "resource", key)
	}
	return nil
}

// WatchedResources lists the workload resources whose informers run, sorted.
func (a *Aggregator) WatchedResources() []string {
	a.watchesMu.Lock()
	defer a.watchesMu.Unlock()
	return slices.Sorted(maps.Keys(a.watches))
}

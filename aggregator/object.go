package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=workstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=combinedstatuses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=statuscollectors,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create
// Writing workload objects (the executing-count label; .status, on the status subresource or the
// main resource) is granted by the aggregated ClusterRole in config/rbac/status_writer_role.yaml,
// not by a marker: it lists the built-in kinds and operators add their own kinds by label, so
// there is no wildcard write.
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// binding is one Binding that lists the object, with the object's entry in it.
type binding struct {
	b     *controlv1alpha1.Binding
	bound BoundObject
}

// objectInputs is everything one object's evaluation reads. WorkStatuses and inventory labels
// are looked up per WEC when needed (once per evaluation), so an evaluation that feeds only the
// WECs changed since the previous one costs no more than those WECs.
type objectInputs struct {
	a        *Aggregator
	key      ObjectKey
	info     resourceInfo
	obj      *unstructured.Unstructured // nil: gone
	bindings []binding
	pruner   *classifier.Pruner
	prunerRV string
	// changed are the WECs whose WorkStatus changed since the evaluation of epoch prevEpoch
	// (see wecIndex.take); epoch is this evaluation's. clusterGen is the inventory-label
	// generation when the evaluation started.
	changed          []string
	prevEpoch, epoch uint64
	clusterGen       uint64

	workStatuses map[string]*controlv1alpha1.WorkStatus // WEC → WorkStatus (nil: none), looked up once
	clusters     map[string]clusterLabels               // WEC → inventory labels, looked up once
	decoded      map[string]report                      // WEC → reported state, decoded on first use

	// orphan: the object was read because it carries the executing-count label (enqueueLabelled).
	orphan bool
}

// clusterLabels is a WEC's inventory labels and their signature.
type clusterLabels struct {
	labels map[string]string
	sig    string
}

// reconcileObject evaluates one workload object: its CombinedStatus objects and its own status.
func (a *Aggregator) reconcileObject(ctx context.Context, key ObjectKey) error {
	a.metrics.evaluations.WithLabelValues("object").Inc()
	eventAt, hadEvent := a.pending.take(key)
	in, err := a.readObject(ctx, key)
	if err != nil {
		if hadEvent {
			a.pending.mark(key, eventAt)
		}
		return err
	}
	wroteCS, err := a.syncCombinedStatuses(ctx, in)
	if err != nil {
		return err
	}
	wroteStatus, err := a.returnStatus(ctx, in)
	if err != nil {
		return err
	}
	if hadEvent && (wroteCS || wroteStatus) {
		a.metrics.latency.Observe(time.Since(eventAt).Seconds())
	}
	return nil
}

func (a *Aggregator) readObject(ctx context.Context, key ObjectKey) (*objectInputs, error) {
	in := &objectInputs{a: a, key: key}
	// Taken first: a WorkStatus written from now on is in the next evaluation's changed set even
	// when this evaluation already reads it.
	in.clusterGen = a.clusterGen.Load()
	in.changed, in.prevEpoch, in.epoch = a.wecs.take(key)
	var bl controlv1alpha1.BindingList
	// Cache reads below skip the deep copy: what they return is shared with the cache and only read.
	if err := a.wdsCache.List(ctx, &bl, client.MatchingFields{indexBindingObjects: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	slices.SortFunc(bl.Items, func(x, y controlv1alpha1.Binding) int { return strings.Compare(x.Name, y.Name) })
	for i := range bl.Items {
		for _, bo := range BoundObjects(&bl.Items[i].Spec) {
			if bo.Key() == key {
				in.bindings = append(in.bindings, binding{b: &bl.Items[i], bound: bo})
				break
			}
		}
	}
	info, known, err := a.catalog.lookup(key.GroupResource())
	if err != nil {
		return nil, err // uncertain: nothing is removed; retried
	}
	if !known {
		return in, nil // a resource that does not exist (any more): nothing to read
	}
	in.info = info
	watched := a.watching(info)
	if len(in.bindings) > 0 && !watched {
		if err := a.ensureWatch(ctx, info); err != nil {
			return nil, err
		}
		watched = true
	}
	_, orphan := a.orphans.LoadAndDelete(key)
	in.orphan = orphan
	if watched || orphan {
		var reader client.Reader = a.wdsCache
		if !watched {
			reader = a.live
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(info.GVK())
		if err := reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, u); err == nil {
			in.obj = u
		} else if !apierrors.IsNotFound(err) {
			if orphan {
				a.orphans.Store(key, struct{}{})
			}
			return nil, err
		}
	}
	var cc controlv1alpha1.ContentClassifier
	if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: classifierName(info.GVR)}, &cc); err == nil {
		in.pruner, in.prunerRV = a.pruners.get(&cc), cc.ResourceVersion
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	return in, nil
}

// workStatus returns the WorkStatus that reports the object from wec (nil: none), the same one
// for the whole evaluation. Two WorkStatuses for one object in one mailbox: the newest wins.
func (in *objectInputs) workStatus(wec string) *controlv1alpha1.WorkStatus {
	if ws, ok := in.workStatuses[wec]; ok {
		return ws
	}
	ws := in.a.wecs.get(in.key, wec)
	if in.workStatuses == nil {
		in.workStatuses = map[string]*controlv1alpha1.WorkStatus{}
	}
	in.workStatuses[wec] = ws
	return ws
}

// cluster returns a WEC's inventory labels (nil when it has no inventory object).
func (in *objectInputs) cluster(wec string) clusterLabels {
	if c, ok := in.clusters[wec]; ok {
		return c
	}
	var c clusterLabels
	if l, ok := in.a.inventoryLabels(wec); ok {
		c = clusterLabels{labels: l, sig: labelsSig(l)}
	}
	if in.clusters == nil {
		in.clusters = map[string]clusterLabels{}
	}
	in.clusters[wec] = c
	return c
}

// cachedInventoryLabels reads a WEC's inventory labels from the ITS cache (shared: only read).
func (a *Aggregator) cachedInventoryLabels(wec string) (map[string]string, bool) {
	var mc clusterv1.ManagedCluster
	if err := a.its.GetCache().Get(context.Background(), client.ObjectKey{Name: wec}, &mc, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	return mc.Labels, true
}

// reported returns a WEC's reported state after ContentClassifier pruning (nil: reported
// nothing), and the time it was last written.
func (in *objectInputs) reported(wec string) (any, *time.Time, error) {
	ws := in.workStatus(wec)
	if ws == nil || len(ws.Status.Raw) == 0 {
		return nil, nil, nil
	}
	var status any
	if err := utiljson.Unmarshal(ws.Status.Raw, &status); err != nil {
		return nil, nil, fmt.Errorf("WorkStatus %s/%s: status: %w", ws.Namespace, ws.Name, err)
	}
	status = in.pruner.Prune(status)
	if status == nil {
		return nil, nil, nil
	}
	t := lastWrite(ws)
	return status, &t, nil
}

// report is one WEC's decoded, pruned reported state.
type report struct {
	status any
	at     *time.Time
}

// reportedOnce is reported, decoded at most once per evaluation; an unreadable WorkStatus counts
// as "reported nothing" (and is logged and counted).
// Decoded reports are also kept across evaluations in a.reports, per WorkStatus UID, resource
// version and classifier version, so a WorkStatus is decoded once per write whatever re-reads it
// (another pair's Table, the status return, a new Table after a collector change).
func (in *objectInputs) reportedOnce(wec string) report {
	if r, ok := in.decoded[wec]; ok {
		return r
	}
	a := in.a
	ws := in.workStatus(wec)
	r, ok := a.reports.get(ws, in.prunerRV)
	if !ok {
		status, at, err := in.reported(wec)
		if err != nil {
			a.metrics.errors.WithLabelValues("workstatus").Inc()
			a.log.Info("ignoring unreadable WorkStatus", "error", err.Error())
		}
		r = report{status: status, at: at}
		a.reports.put(ws, in.prunerRV, r)
	}
	if in.decoded == nil {
		in.decoded = map[string]report{}
	}
	in.decoded[wec] = r
	return r
}

// reportSig changes whenever what a WEC reported (after pruning) can have changed.
func (in *objectInputs) reportSig(wec string) string {
	rv := ""
	if ws := in.workStatus(wec); ws != nil {
		rv = string(ws.UID) + "/" + ws.ResourceVersion
	}
	return rv + "\x00" + in.prunerRV
}

// lastWrite is when a WorkStatus was last written: the newest managedFields time, else its
// creation time.
func lastWrite(ws *controlv1alpha1.WorkStatus) time.Time {
	t := ws.CreationTimestamp.Time
	for _, mf := range ws.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t.UTC()
}

// syncCombinedStatuses writes the CombinedStatus of every (object, policy) pair that references
// collectors and deletes the object's others. It reports whether it wrote anything.
func (a *Aggregator) syncCombinedStatuses(ctx context.Context, in *objectInputs) (bool, error) {
	wrote := false
	want := map[string]bool{} // CombinedStatus names that should exist
	keep := map[pairKey]bool{}
	if in.obj != nil {
		for _, b := range in.bindings {
			if len(b.bound.Modulation.StatusCollectors) == 0 {
				continue
			}
			var bp controlv1alpha1.BindingPolicy
			if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: b.b.Name}, &bp, client.UnsafeDisableDeepCopy); err != nil {
				if apierrors.IsNotFound(err) {
					continue // the pair's policy is gone
				}
				return wrote, err
			}
			pk := pairKey{Object: in.key, Policy: bp.UID}
			keep[pk] = true
			cs, err := a.evaluatePair(ctx, in, b, &bp, pk)
			if err != nil {
				return wrote, err
			}
			want[cs.Name] = true
			w, err := a.writeCombinedStatus(ctx, cs)
			if err != nil {
				return wrote, err
			}
			wrote = wrote || w
		}
	}
	a.tables.dropExcept(in.key, keep)
	var existing controlv1alpha1.CombinedStatusList
	if err := a.wdsCache.List(ctx, &existing, client.MatchingFields{indexCombinedStatusObject: in.key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return wrote, err
	}
	for i := range existing.Items {
		cs := &existing.Items[i]
		if want[cs.Name] || !slices.ContainsFunc(cs.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == FieldManager }) {
			continue
		}
		cs = cs.DeepCopy() // shared with the cache
		if err := a.wds.Delete(ctx, cs, client.Preconditions{UID: &cs.UID}); client.IgnoreNotFound(err) != nil {
			return wrote, err
		}
		a.metrics.writes.WithLabelValues("combinedstatus", "delete").Inc()
		wrote = true
	}
	return wrote, nil
}

// evaluatePair feeds the pair's Table and returns the CombinedStatus it should have.
func (a *Aggregator) evaluatePair(ctx context.Context, in *objectInputs, b binding, bp *controlv1alpha1.BindingPolicy, pk pairKey) (*controlv1alpha1.CombinedStatus, error) {
	var cols []*collector.Collector
	for _, name := range b.bound.Modulation.StatusCollectors {
		var sc controlv1alpha1.StatusCollector
		if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: name}, &sc); err != nil {
			if apierrors.IsNotFound(err) {
				continue // named in the StatusCollectorsAvailable condition
			}
			return nil, err
		}
		col, errs, _ := a.compiler.Compile(&sc)
		if len(errs) > 0 || col == nil {
			continue // reported in the collector's status
		}
		cols = append(cols, col)
	}
	dests := a.dests.of(b.b)
	ts := a.tables.get(pk, cols)
	ts.feed(in, cols, dests)
	results := ts.table.Results()
	for _, r := range results {
		a.metrics.rows.Observe(float64(len(r.Rows)))
	}
	ns := in.key.Namespace
	if ns == "" {
		ns = controlv1alpha1.ReportNamespace
	}
	return &controlv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      string(in.obj.GetUID()) + "." + string(bp.UID),
			Namespace: ns,
			Labels: map[string]string{
				controlv1alpha1.LabelCombinedStatusAPIGroup:      in.key.Group,
				controlv1alpha1.LabelCombinedStatusResource:      in.key.Resource,
				controlv1alpha1.LabelCombinedStatusNamespace:     in.key.Namespace,
				controlv1alpha1.LabelCombinedStatusName:          in.key.Name,
				controlv1alpha1.LabelCombinedStatusBindingPolicy: bp.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: in.obj.GetAPIVersion(), Kind: in.obj.GetKind(), Name: in.obj.GetName(), UID: in.obj.GetUID(),
			}},
		},
		Results: results,
	}, nil
}

// writeCombinedStatus applies cs unless the cached copy already says the same.
func (a *Aggregator) writeCombinedStatus(ctx context.Context, cs *controlv1alpha1.CombinedStatus) (bool, error) {
	var cur controlv1alpha1.CombinedStatus // shared with the cache: only read
	err := a.wdsCache.Get(ctx, client.ObjectKey{Namespace: cs.Namespace, Name: cs.Name}, &cur, client.UnsafeDisableDeepCopy)
	switch {
	case err == nil:
		if combinedStatusCurrent(&cur, cs) {
			return false, nil
		}
	case apierrors.IsNotFound(err):
		if cs.Namespace == controlv1alpha1.ReportNamespace {
			if err := a.ensureReportNamespace(ctx); err != nil {
				return false, err
			}
		}
	default:
		return false, err
	}
	u, err := toApply(cs, "CombinedStatus", false)
	if err != nil {
		return false, err
	}
	if a.servedCurrent(u, &cur) {
		return false, nil
	}
	if err := a.apply(ctx, u, "", true, "combinedstatus"); err != nil {
		return true, err
	}
	a.ownWrites.record(combinedStatusWriteKey(cs.Namespace, cs.Name), u.GetResourceVersion())
	return true, nil
}

// servedCurrent reports whether cur, stored under a served schema that lacks some of the fields
// of u (KubeStellar's CRDs: aggregationErrors[].row and .count), already holds everything of u
// that the schema can hold: without it every evaluation would apply the same pruned object again.
func (a *Aggregator) servedCurrent(u *unstructured.Unstructured, cur *controlv1alpha1.CombinedStatus) bool {
	if cur.Name == "" {
		return false
	}
	sent, _, dropped := a.pruneToServed(u)
	if len(dropped) == 0 {
		return false
	}
	var want controlv1alpha1.CombinedStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sent.Object, &want); err != nil {
		return false
	}
	return combinedStatusCurrent(cur, &want)
}

// combinedStatusCurrent reports whether cur already has want's labels, owner and results. Results
// are compared as JSON values, not as bytes: the apiserver re-encodes the plain JSON of Object and
// Array cells, and a CombinedStatus in an earlier wire form differs, so it is rewritten.
func combinedStatusCurrent(cur, want *controlv1alpha1.CombinedStatus) bool {
	for k, v := range want.Labels {
		if w, ok := cur.Labels[k]; !ok || w != v {
			return false
		}
	}
	if !slices.ContainsFunc(cur.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == want.OwnerReferences[0].UID }) {
		return false
	}
	return collector.ResultsEqual(cur.Results, want.Results)
}

func (a *Aggregator) ensureReportNamespace(ctx context.Context) error {
	var ns corev1.Namespace
	if err := a.wdsCache.Get(ctx, client.ObjectKey{Name: controlv1alpha1.ReportNamespace}, &ns); err == nil {
		return nil
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlv1alpha1.ReportNamespace}}
	if err := a.wds.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// neverWritten are the resources whose objects statusfold never writes (docs/rules.md "Status return").
var neverWritten = map[schema.GroupResource]bool{
	{Group: "", Resource: "namespaces"}:                                    true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// returnStatus applies the docs/rules.md "Status return" decision to the object's own status and executing-count label.
func (a *Aggregator) returnStatus(ctx context.Context, in *objectInputs) (bool, error) {
	if in.obj == nil {
		a.returned.forget(in.key)
		a.returnStates.forget(in.key)
		return false, nil
	}
	if neverWritten[in.key.GroupResource()] {
		return false, nil
	}
	var input ReturnInput
	var qs []string // the qualified WECs, sorted
	for _, b := range in.bindings {
		m := b.bound.Modulation
		if !m.WantSingletonReportedState && !m.WantMultiWECReportedState {
			continue
		}
		input.Singleton = input.Singleton || m.WantSingletonReportedState
		input.Multi = input.Multi || m.WantMultiWECReportedState
		qs = unionSorted(qs, a.dests.of(b.b))
	}
	input.Qualified = len(qs)
	if !input.Singleton && !input.Multi && appliedBy(in.obj, FieldManager) {
		// Removing statusfold's return: unless the object is returned under another resource.
		elsewhere, err := a.returnedElsewhere(ctx, in)
		if err != nil {
			if in.orphan {
				a.orphans.Store(in.key, struct{}{}) // read again at the retry
			}
			return false, err
		}
		input.ReturnedElsewhere = elsewhere
	}
	d := DecideReturn(input)
	if d.Mode == ReturnLeave {
		return false, nil
	}
	var status map[string]any
	if d.Mode == ReturnNothing {
		a.returnStates.forget(in.key)
	} else {
		var err error
		status, err = a.computeReturn(in, qs)
		if err != nil {
			a.metrics.errors.WithLabelValues("aggregation").Inc()
			a.failure(in.key, "AggregationFailed", "%v", err)
			return false, nil // retried when an input changes
		}
	}
	labels := map[string]string{}
	if d.Label {
		labels[LabelExecutingCount] = strconv.Itoa(input.Qualified)
	}
	if l := d.Mode.Label(); l != "" {
		labels[l] = "true"
	}
	status, dropped := a.pruneToSchema(in, status)
	return a.writeReturn(ctx, in, labels, status, dropped)
}

// pruneToSchema prunes a returned status to the WDS's schema for the object's kind (see
// schemaprune.go) and returns it with the paths it dropped. When the schema cannot be read the
// status is returned whole (the apiserver then decides) and the failure is counted and logged.
func (a *Aggregator) pruneToSchema(in *objectInputs, status map[string]any) (map[string]any, []string) {
	if status == nil {
		return nil, nil
	}
	t, err := a.trees.statusTree(a.opts.Schemas, in.info.GVK())
	if errors.Is(err, resolver.ErrSchemaNotFound) {
		// The WDS publishes no schema for the kind (e.g. an aggregated API without OpenAPI):
		// the apiserver decides.
		return status, nil
	}
	if err != nil {
		a.metrics.errors.WithLabelValues("schema").Inc()
		a.failure(in.key, "SchemaUnavailable", "status returned unpruned: no schema for %s: %v", in.info.GVK(), err)
		return status, nil
	}
	return pruneStatus(status, t)
}

// computeReturn copies or aggregates the qualified WECs' reported states through the engine's
// incremental State of the object: only WECs whose WorkStatus (or classifier) changed are
// re-read — found from the WECs changed since the previous evaluation when the State was fed by
// it, else by comparing every qualified WEC's signature.
func (a *Aggregator) computeReturn(in *objectInputs, q []string) (map[string]any, error) {
	gk := schema.GroupKind{Group: in.info.GVR.Group, Kind: in.info.Kind}
	rs := a.returnStates.get(in.key, gk, a.engine)
	if v, changed := rs.object.update(in.obj); changed {
		rs.state.SetObject(v)
	}
	for _, name := range rs.stale(in, &rs.q, q, rs.sigs, rs.state.RemoveWEC) {
		sig := in.reportSig(name)
		if old, ok := rs.sigs[name]; ok && old == sig {
			continue
		}
		w := aggregation.WEC{Name: name}
		if m, ok := in.reportedOnce(name).status.(map[string]any); ok {
			w.Status = m
		}
		if ws := in.workStatus(name); ws != nil {
			w.Details = ws.StatusDetails.DeepCopy()
		}
		rs.state.UpsertWEC(w)
		rs.sigs[name] = sig
	}
	rs.fed(in)
	return rs.state.Result()
}

// writeReturn brings the object's return labels (returnLabels; labels holds those wanted) and
// status to what is wanted, with server-side apply under FieldManager: the labels on the main
// resource, the status on the status subresource (or both on the main resource for kinds without
// one). Fields that other managers own are never taken over: a conflict is reported, not forced.
func (a *Aggregator) writeReturn(ctx context.Context, in *objectInputs, labels map[string]string, status map[string]any, dropped []string) (bool, error) {
	obj := in.obj
	statusSub := "status"
	if !in.info.HasStatus {
		statusSub = ""
	}
	labelOK := true
	owned := ownedAt(obj, "", "f:metadata", "f:labels")
	for _, k := range returnLabels {
		want, wanted := labels[k]
		_, owns := owned["f:"+k]
		cur, has := obj.GetLabels()[k]
		if wanted != owns || (wanted && (!has || cur != want)) {
			labelOK = false
			break
		}
	}
	ownsStatus := ownsField(obj, statusSub, "f:status")
	statusJSON := ""
	if status != nil {
		b, err := json.Marshal(status)
		if err != nil {
			return false, err
		}
		statusJSON = string(b)
	}
	memo, skipped := a.returned.get(in.key, obj.GetUID())
	var statusOK bool
	if status == nil {
		statusOK = !ownsStatus
	} else {
		cur, _ := obj.Object["status"].(map[string]any)
		// The fields the previous write of this same status left out (owned by others, or
		// rejected) are not expected: the status is not re-applied, to conflict again, at every
		// evaluation, only when it changes.
		statusOK = memo == statusJSON && (ownsStatus || len(skipped) > 0) && contains(cur, without(statusJSON, skipped))
	}
	if labelOK && statusOK {
		return false, nil
	}
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(obj.GroupVersionKind())
		u.SetNamespace(obj.GetNamespace())
		u.SetName(obj.GetName())
		return u
	}
	wrote := false
	var skip []string // status fields left out by the applies below
	if !labelOK || (statusSub == "" && !statusOK) {
		u := base()
		// The resource version makes the apply conditional: it never re-creates a deleted object.
		u.SetResourceVersion(obj.GetResourceVersion())
		if len(labels) > 0 {
			u.SetLabels(labels)
		}
		if statusSub == "" && status != nil {
			u.Object["status"] = without(statusJSON, nil) // a copy: applyReturn may remove fields
		}
		left, err := a.applyReturn(ctx, u, "", in)
		if err != nil {
			return wrote, err
		}
		skip = append(skip, left...)
		wrote = true
	}
	if statusSub != "" && !statusOK {
		u := base()
		if status != nil {
			u.Object["status"] = without(statusJSON, nil)
		}
		left, err := a.applyReturn(ctx, u, statusSub, in)
		if err != nil {
			return wrote, err
		}
		skip = append(skip, left...)
		wrote = true
	}
	if !statusOK && len(dropped) > 0 {
		a.reportDropped(in, dropped)
	}
	if status == nil {
		a.returned.forget(in.key)
	} else if !statusOK {
		a.returned.set(in.key, obj.GetUID(), statusJSON, skip)
	}
	return wrote, nil
}

// without decodes a status (JSON) into a fresh map and removes the fields at the given paths
// (see removeFields).
func without(statusJSON string, paths []string) map[string]any {
	if slices.Contains(paths, ".status") { // nothing of it was written
		return map[string]any{}
	}
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(statusJSON), &m); err != nil || m == nil {
		return nil
	}
	if len(paths) > 0 {
		obj := map[string]any{"status": m}
		removeFields(obj, paths)
		m, _ = obj["status"].(map[string]any)
	}
	return m
}

// applyReturn applies without forcing. When other field managers own some of the fields with
// other values, those fields are left to them: they are dropped from the apply, which is retried
// with the rest. Likewise, status fields that the kind's validation rejects (e.g. a Job's
// completionTime without a Complete condition) are dropped and the rest is written. Events name
// what was left out; nothing is retried in a loop.
func (a *Aggregator) applyReturn(ctx context.Context, u *unstructured.Unstructured, sub string, in *objectInputs) ([]string, error) {
	var owned, rejected, left []string
	for attempt := 0; ; attempt++ {
		err := a.apply(ctx, u, sub, false, "status")
		if err == nil {
			a.ownWrites.record(in.key.String(), u.GetResourceVersion())
			break
		}
		conflicts, invalid := conflictFields(err), invalidStatusFields(err)
		switch {
		case attempt < 4 && len(conflicts) > 0 && removeFields(u.Object, conflicts):
			a.metrics.conflicts.Inc()
			owned = append(owned, conflicts...)
			left = append(left, conflicts...)
		case attempt < 4 && apierrors.IsInvalid(err) && len(invalid) > 0 && removeFields(u.Object, invalid):
			a.metrics.errors.WithLabelValues("invalid-status").Inc()
			rejected = append(rejected, err.Error())
			left = append(left, invalid...)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || len(conflicts) > 0:
			a.metrics.errors.WithLabelValues("status-not-returned").Inc()
			a.log.Info("status not returned", "key", in.key.String(), "error", err.Error())
			a.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusNotReturned", "ReturnStatus", "%s", err.Error())
			return []string{".status"}, nil
		default:
			return nil, err
		}
	}
	if len(owned) > 0 {
		a.recorder.Eventf(in.obj, nil, corev1.EventTypeNormal, "FieldsOwnedByOthers", "ReturnStatus",
			"not written because another field manager owns them: %s", strings.Join(owned, ", "))
	}
	if len(rejected) > 0 {
		a.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusFieldsRejected", "ReturnStatus",
			"written without the fields the apiserver rejected: %s", strings.Join(rejected, "; "))
	}
	return left, nil
}

// apiStatus returns the API status carried by err, if any.
func apiStatus(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &s
	}
	return nil
}

// conflictFields lists the field paths (".status.readyReplicas") of a server-side apply conflict.
func conflictFields(err error) []string {
	var out []string
	if st := apiStatus(err); st != nil && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict && c.Field != "" {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// invalidStatusFields lists the status fields ("status.completionTime") an Invalid error names.
func invalidStatusFields(err error) []string {
	var out []string
	if st := apiStatus(err); st != nil && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type != metav1.CauseTypeFieldManagerConflict && strings.HasPrefix(strings.TrimPrefix(c.Field, "."), "status.") {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// removeFields deletes the fields at the given paths (".a.b", or ".a.b[key=...]..." which removes
// ".a.b") from obj, and reports whether any was present.
func removeFields(obj map[string]any, paths []string) bool {
	removed := false
	for _, p := range paths {
		p, _, _ = strings.Cut(p, "[")
		keys := strings.Split(strings.TrimPrefix(p, "."), ".")
		if len(keys) < 2 { // never the whole status, metadata, ...
			continue
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(obj, keys...); found {
			unstructured.RemoveNestedField(obj, keys...)
			removed = true
		}
	}
	return removed
}

// ownsField reports whether FieldManager's managed-fields entry for the subresource ("" for the
// main resource) contains the field path (FieldsV1 keys such as "f:status").
func ownsField(obj *unstructured.Unstructured, subresource string, path ...string) bool {
	return ownedAt(obj, subresource, path...) != nil
}

// ownedAt returns the FieldsV1 set at the field path in FieldManager's managed-fields entry for
// the subresource, or nil when that entry does not contain the path.
func ownedAt(obj *unstructured.Unstructured, subresource string, path ...string) map[string]any {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != FieldManager || mf.Subresource != subresource || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		cur := fields
		for _, p := range path {
			next, ok := cur[p].(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = next
		}
		if cur != nil {
			return cur
		}
	}
	return nil
}

// contains reports whether have holds every field of want with an equal value (numbers compared
// by value, lists element by element).
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		if wf, ok := number(want); ok {
			hf, ok := number(have)
			return ok && hf == wf
		}
		return equality.Semantic.DeepEqual(have, want)
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

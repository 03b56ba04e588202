package wecsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Runner drives a Simulator against an apiserver that is both WDS and ITS (or two of them).
type Runner struct {
	// WDS reads Bindings and workload objects; ITS gets ManagedClusters, mailbox namespaces and
	// WorkStatuses. ITS defaults to WDS.
	WDS, ITS client.Client
	// Mapper maps a Binding's group/version/resource to its kind (on the WDS).
	Mapper   meta.RESTMapper
	Scenario Scenario
	// WDSName goes into the label transport.kubestellar.io/originWdsName of every WorkStatus.
	WDSName string
	// Interval is the time between ticks (Run only).
	Interval time.Duration
	// Ticks stops Run after that many ticks; 0 runs until ctx ends.
	Ticks int
	// Log receives one line per change (nil: no log).
	Log io.Writer
	// Now is the clock for the timestamps in reported states (default time.Now).
	Now func() time.Time

	sim *Simulator
}

func (r *Runner) its() client.Client {
	if r.ITS != nil {
		return r.ITS
	}
	return r.WDS
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "wec-sim: "+format+"\n", args...)
	}
}

// Run steps the simulation every Interval until ctx ends (or Ticks ticks are done). A failing
// step is logged and retried at the next tick; Run returns nil when ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for tick := 0; r.Ticks == 0 || tick < r.Ticks; tick++ {
		if err := r.Step(ctx, tick); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.logf("tick %d: %v", tick, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}

// pairKey is one (object, WEC) pair that a Binding asks for.
type pairKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	wec             string
}

// Step performs one tick: registers and deregisters WECs, then writes every bound object's
// reported state and deletes the WorkStatuses of pairs that are no longer bound.
func (r *Runner) Step(ctx context.Context, tick int) error {
	if r.sim == nil {
		r.sim = NewSimulator(r.Scenario)
	}
	now := r.now()
	var mcs clusterv1.ManagedClusterList
	if err := r.its().List(ctx, &mcs); err != nil {
		return fmt.Errorf("listing ManagedClusters: %w", err)
	}
	registered := make(map[string]*clusterv1.ManagedCluster, len(mcs.Items))
	for i := range mcs.Items {
		registered[mcs.Items[i].Name] = &mcs.Items[i]
	}
	present := map[string]bool{}
	for _, w := range r.Scenario.WECs {
		mc := registered[w.Name]
		if w.Present(tick) {
			present[w.Name] = true
			if err := r.registerWEC(ctx, w, mc); err != nil {
				return err
			}
		} else if mc != nil {
			if err := r.deregisterWEC(ctx, mc, tick); err != nil {
				return err
			}
		}
	}
	pairs, err := r.boundPairs(ctx, present)
	if err != nil {
		return err
	}
	existing, err := r.listOwn(ctx)
	if err != nil {
		return err
	}
	keep := map[client.ObjectKey]bool{}
	objects := map[string]*Object{}
	for _, pk := range pairs {
		okey := pk.gvr.String() + "/" + pk.namespace + "/" + pk.name
		obj, cached := objects[okey]
		if !cached {
			obj, err = r.readObject(ctx, pk)
			if err != nil {
				return err
			}
			objects[okey] = obj
		}
		if obj == nil {
			continue
		}
		rep, ok := r.sim.Observe(*obj, pk.wec, tick, now)
		if !ok {
			continue
		}
		ws := r.workStatus(*obj, pk.wec, rep, now)
		keep[client.ObjectKeyFromObject(ws)] = true
		if err := r.writeWorkStatus(ctx, ws, existing[client.ObjectKeyFromObject(ws)]); err != nil {
			return err
		}
	}
	return r.deleteStale(ctx, existing, keep)
}

// listOwn lists the WorkStatuses this runner wrote (for its WDS), by key: one list per tick
// instead of one read per (object, WEC) pair.
func (r *Runner) listOwn(ctx context.Context) (map[client.ObjectKey]*controlv1alpha1.WorkStatus, error) {
	var list controlv1alpha1.WorkStatusList
	if err := r.its().List(ctx, &list, client.MatchingLabels{
		controlv1alpha1.LabelOriginWDSName: r.WDSName, LabelSimulated: "true",
	}); err != nil {
		return nil, fmt.Errorf("listing WorkStatuses: %w", err)
	}
	out := make(map[client.ObjectKey]*controlv1alpha1.WorkStatus, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out, nil
}

// registerWEC creates the WEC's mailbox namespace and ManagedCluster when mc (what is registered
// now) is nil, and puts back its labels when they changed.
func (r *Runner) registerWEC(ctx context.Context, w WEC, mc *clusterv1.ManagedCluster) error {
	if mc == nil {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}
		if err := r.its().Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating mailbox namespace %s: %w", w.Name, err)
		}
		mc = &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: w.Labels},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}
		if err := r.its().Create(ctx, mc); err != nil {
			return fmt.Errorf("registering WEC %s: %w", w.Name, err)
		}
		r.logf("WEC %s joined (%s, region %s)", w.Name, w.Role, w.Labels[LabelRegion])
		return nil
	}
	if labelsInclude(mc.Labels, w.Labels) {
		return nil
	}
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	for k, v := range w.Labels {
		mc.Labels[k] = v
	}
	return r.its().Update(ctx, mc)
}

func (r *Runner) deregisterWEC(ctx context.Context, mc *clusterv1.ManagedCluster, tick int) error {
	err := r.its().Delete(ctx, mc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deregistering WEC %s: %w", mc.Name, err)
	}
	r.logf("WEC %s left at tick %d", mc.Name, tick)
	return nil
}

// boundPairs lists, from every Binding, the (object, WEC) pairs whose WEC is a present simulated
// one, in a stable order.
func (r *Runner) boundPairs(ctx context.Context, present map[string]bool) ([]pairKey, error) {
	var bindings controlv1alpha1.BindingList
	if err := r.WDS.List(ctx, &bindings); err != nil {
		return nil, fmt.Errorf("listing Bindings: %w", err)
	}
	set := map[pairKey]bool{}
	for _, b := range bindings.Items {
		for _, d := range b.Spec.Destinations {
			if !present[d.ClusterId] {
				continue
			}
			for _, c := range b.Spec.Workload.NamespaceScope {
				set[pairKey{gvr: gvrOf(c.GroupVersionResource), namespace: c.Namespace, name: c.Name, wec: d.ClusterId}] = true
			}
			for _, c := range b.Spec.Workload.ClusterScope {
				set[pairKey{gvr: gvrOf(c.GroupVersionResource), name: c.Name, wec: d.ClusterId}] = true
			}
		}
	}
	out := make([]pairKey, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.gvr != b.gvr {
			return a.gvr.String() < b.gvr.String()
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.wec < b.wec
	})
	return out, nil
}

func gvrOf(g metav1.GroupVersionResource) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g.Group, Version: g.Version, Resource: g.Resource}
}

// readObject reads the bound workload object; nil when it is gone or its kind is not simulated.
func (r *Runner) readObject(ctx context.Context, pk pairKey) (*Object, error) {
	gvk, err := r.Mapper.KindFor(pk.gvr)
	if err != nil {
		return nil, nil //nolint:nilerr // an unknown resource has nothing to simulate.
	}
	if !Simulated(gvk.Group, gvk.Kind) {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := r.WDS.Get(ctx, client.ObjectKey{Namespace: pk.namespace, Name: pk.name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &Object{
		Group: pk.gvr.Group, Version: pk.gvr.Version, Resource: pk.gvr.Resource, Kind: gvk.Kind,
		Namespace: pk.namespace, Name: pk.name, Generation: u.GetGeneration(), Content: u.Object,
	}, nil
}

// WorkStatusName is the name the WEC-side agent gives the WorkStatus of an object:
// <group><version>-<kind>-<namespace>-<name>, lowercase (the namespace part only for namespaced
// objects).
func WorkStatusName(group, version, kind, namespace, name string) string {
	parts := []string{strings.ReplaceAll(group, ".", "") + version, kind}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	parts = append(parts, name)
	return strings.ToLower(strings.Join(parts, "-"))
}

func (r *Runner) workStatus(obj Object, wec string, rep Report, now time.Time) *controlv1alpha1.WorkStatus {
	raw, _ := json.Marshal(rep.Status)
	wecGen := rep.WECGeneration
	return &controlv1alpha1.WorkStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkStatusName(obj.Group, obj.Version, obj.Kind, obj.Namespace, obj.Name),
			Namespace: wec,
			Labels:    map[string]string{controlv1alpha1.LabelOriginWDSName: r.WDSName, LabelSimulated: "true"},
		},
		Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{
			Group: obj.Group, Version: obj.Version, Resource: obj.Resource, Kind: obj.Kind,
			Namespace: obj.Namespace, Name: obj.Name,
		}},
		Status: controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}},
		StatusDetails: controlv1alpha1.StatusDetails{
			LastGeneration:          rep.LastGeneration,
			LastGenerationIsApplied: rep.LastGenerationIsApplied,
			LastCurrencyUpdateTime:  metav1.NewTime(now.UTC().Truncate(time.Second)),
			WECGeneration:           &wecGen,
		},
	}
}

// writeWorkStatus creates or updates ws when its content differs from what is stored: the main
// resource (labels, sourceRef, statusDetails) and the status subresource, as the agent does.
func (r *Runner) writeWorkStatus(ctx context.Context, ws, cur *controlv1alpha1.WorkStatus) error {
	if cur == nil {
		status := ws.Status
		if err := r.its().Create(ctx, ws); err != nil {
			return fmt.Errorf("creating WorkStatus %s/%s: %w", ws.Namespace, ws.Name, err)
		}
		ws.Status = status
		r.logf("%s/%s: first report", ws.Namespace, ws.Name)
		return r.its().Status().Update(ctx, ws)
	}
	if !sameJSON(cur.Status.Raw, ws.Status.Raw) {
		cur.Status = ws.Status
		cur.StatusDetails.LastCurrencyUpdateTime = ws.StatusDetails.LastCurrencyUpdateTime
		if err := r.its().Status().Update(ctx, cur); err != nil {
			return fmt.Errorf("updating WorkStatus %s/%s status: %w", ws.Namespace, ws.Name, err)
		}
	} else {
		// Unchanged state keeps its currency time, as the agent reports only changes.
		ws.StatusDetails.LastCurrencyUpdateTime = cur.StatusDetails.LastCurrencyUpdateTime
	}
	if cur.Spec != ws.Spec || !sameDetails(cur.StatusDetails, ws.StatusDetails) || !labelsInclude(cur.Labels, ws.Labels) {
		cur.Spec, cur.StatusDetails = ws.Spec, ws.StatusDetails
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		for k, v := range ws.Labels {
			cur.Labels[k] = v
		}
		if err := r.its().Update(ctx, cur); err != nil {
			return fmt.Errorf("updating WorkStatus %s/%s: %w", ws.Namespace, ws.Name, err)
		}
	}
	return nil
}

func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func sameDetails(a, b controlv1alpha1.StatusDetails) bool {
	return a.LastGeneration == b.LastGeneration && a.LastGenerationIsApplied == b.LastGenerationIsApplied &&
		a.LastCurrencyUpdateTime.Equal(&b.LastCurrencyUpdateTime) &&
		(a.WECGeneration == nil) == (b.WECGeneration == nil) &&
		(a.WECGeneration == nil || *a.WECGeneration == *b.WECGeneration)
}

func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// deleteStale deletes the simulator's WorkStatuses (for this WDS) that keep does not list.
func (r *Runner) deleteStale(ctx context.Context, existing map[client.ObjectKey]*controlv1alpha1.WorkStatus, keep map[client.ObjectKey]bool) error {
	var errs []error
	for key, ws := range existing {
		if keep[key] {
			continue
		}
		if err := r.its().Delete(ctx, ws); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		r.logf("%s/%s: deleted (no longer bound)", ws.Namespace, ws.Name)
	}
	return errors.Join(errs...)
}

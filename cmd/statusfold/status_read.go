package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	sfscheme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/health"
)

type statusReader struct {
	c       client.Client // the WDS
	its     client.Client // the ITS (the WDS's client when they are one apiserver)
	mapper  meta.RESTMapper
	wdsName string
	sameITS bool
	engine  *aggregation.Engine // judges health (Lua checks, then Go) and names the rule in force
}

// newStatusReader reads the WDS through cfg and WorkStatuses through itsCfg (the same config:
// one apiserver), only those of the WDS named wdsName.
func newStatusReader(cfg, itsCfg *rest.Config, wdsName string) (*statusReader, error) {
	c, mapper, err := statusClient(cfg)
	if err != nil {
		return nil, err
	}
	s := &statusReader{c: c, its: c, mapper: mapper, wdsName: wdsName, sameITS: itsCfg == cfg}
	if s.engine, err = luaEngine("", io.Discard); err != nil {
		return nil, err
	}
	if !s.sameITS {
		if s.its, _, err = statusClient(itsCfg); err != nil {
			return nil, fmt.Errorf("ITS: %w", err)
		}
	}
	return s, nil
}

func statusClient(cfg *rest.Config) (client.Client, meta.RESTMapper, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	c, err := client.New(cfg, client.Options{Scheme: sfscheme.New(), Mapper: mapper})
	if err != nil {
		return nil, nil, err
	}
	return c, mapper, nil
}

// resolve turns TYPE/NAME or TYPE NAME into a resource and kind, as kubectl does (short names,
// singular and plural, resource.group).
func (s *statusReader) resolve(args []string) (schema.GroupVersionResource, schema.GroupVersionKind, string, error) {
	typ, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if i := strings.Index(typ, "/"); i > 0 {
		typ, name = typ[:i], typ[i+1:]
	}
	if name == "" {
		return schema.GroupVersionResource{}, schema.GroupVersionKind{}, "", fmt.Errorf("name the object as TYPE/NAME or TYPE NAME, e.g. deployment/nginx")
	}
	fq, gr := schema.ParseResourceArg(typ)
	var gvr schema.GroupVersionResource
	var err error
	if fq != nil {
		gvr, err = s.mapper.ResourceFor(*fq)
	}
	if fq == nil || err != nil {
		gvr, err = s.mapper.ResourceFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return gvr, schema.GroupVersionKind{}, "", fmt.Errorf("resource type %q is not served by the WDS (check the name, or whether its CRD or API is installed there)", typ)
	}
	if err != nil {
		return gvr, schema.GroupVersionKind{}, "", fmt.Errorf("resource type %q: %w", typ, err)
	}
	gvk, err := s.mapper.KindFor(gvr)
	return gvr, gvk, name, err
}

// read reads the report on the object named name (in namespace, unless its kind is cluster
// scoped): the object with its returned .status and health, each destination WEC's reported
// state and the CombinedStatuses about it.
func (s *statusReader) read(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) (*statusReport, error) {
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	key := aggregator.ObjectKey{Group: gvk.Group, Resource: gvr.Resource, Namespace: namespace, Name: name}
	r := s.newStatusReport(ctx, gvk, key, obj)
	if r.WECs, err = s.wecReports(ctx, gvk.GroupKind(), key, obj); err != nil {
		return nil, err
	}
	if r.Combined, err = s.combinedReports(ctx, key); err != nil {
		return nil, err
	}
	return r, nil
}

// newStatusReport is the report's part about the WDS object obj itself (of kind gvk, at key): its
// identity and generation, executing-count label, returned .status, Argo CD health and the rule that
// makes its aggregate.
func (s *statusReader) newStatusReport(ctx context.Context, gvk schema.GroupVersionKind, key aggregator.ObjectKey, obj *unstructured.Unstructured) *statusReport {
	r := &statusReport{ExecutingCount: obj.GetLabels()[aggregator.LabelExecutingCount]}
	r.Object.Group, r.Object.Version, r.Object.Kind, r.Object.Resource = gvk.Group, gvk.Version, gvk.Kind, key.Resource
	r.Object.Namespace, r.Object.Name, r.Object.Generation = key.Namespace, key.Name, obj.GetGeneration()
	r.Status, _, _ = unstructured.NestedMap(obj.Object, "status")
	if res, ok := s.engine.Health(gvk.GroupKind(), obj.Object); ok {
		r.Health = healthOf(res, nil)
	}
	s.installPolicies(ctx)
	r.Rule, r.HealthCheck = s.engine.Rule(gvk.GroupKind()), s.engine.HealthCheck(gvk.GroupKind())
	return r
}

// wecReports is the per-WEC reported state of the object at key (obj in the WDS, of kind gk): one
// report per WEC that has a WorkStatus about it, plus one "not yet" report per destination
// without one, sorted by WEC name (empty, not nil, when there is none).
func (s *statusReader) wecReports(ctx context.Context, gk schema.GroupKind, key aggregator.ObjectKey, obj *unstructured.Unstructured) ([]wecReport, error) {
	byWEC, err := s.workStatuses(ctx, key)
	if err != nil {
		return nil, err
	}
	wecs := map[string]*wecReport{}
	for _, list := range byWEC {
		// One WorkStatus per WEC: the one the controller reads when a mailbox holds several.
		ws := aggregator.NewestWorkStatus(list)
		w := &wecReport{Name: ws.Namespace, Reported: true, LastGeneration: ws.StatusDetails.LastGeneration,
			Applied: ws.StatusDetails.LastGenerationIsApplied}
		if !ws.StatusDetails.LastCurrencyUpdateTime.IsZero() {
			w.Updated = ws.StatusDetails.LastCurrencyUpdateTime.UTC().Format(time.RFC3339)
		}
		if s.engine.HealthCheck(gk) != "" {
			w.Health = healthOf(s.wecHealth(gk, obj, ws))
		}
		wecs[w.Name] = w
	}
	dests, err := s.destinations(ctx, key)
	if err != nil {
		return nil, err
	}
	for _, d := range dests {
		if _, ok := wecs[d]; !ok {
			wecs[d] = &wecReport{Name: d}
		}
	}
	out := []wecReport{}
	for _, w := range wecs {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// workStatuses are the WorkStatuses of this WDS about the object at key, by WEC (mailbox
// namespace). An ITS that does not serve WorkStatuses is an error that says so.
func (s *statusReader) workStatuses(ctx context.Context, key aggregator.ObjectKey) (map[string][]*controlv1alpha1.WorkStatus, error) {
	var wss controlv1alpha1.WorkStatusList
	if err := s.its.List(ctx, &wss, client.MatchingLabels{controlv1alpha1.LabelOriginWDSName: s.wdsName}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			where := "the ITS"
			if s.sameITS {
				where = "the WDS (used as the ITS: no --its-kubeconfig)"
			}
			return nil, fmt.Errorf("%s does not serve WorkStatuses (%s), so no WEC's reported state can be read; point --its-kubeconfig at the ITS",
				where, controlv1alpha1.GroupVersion.WithResource("workstatuses").GroupResource())
		}
		return nil, err
	}
	byWEC := map[string][]*controlv1alpha1.WorkStatus{}
	for i := range wss.Items {
		if ws := &wss.Items[i]; aggregator.WorkStatusObject(ws) == key {
			byWEC[ws.Namespace] = append(byWEC[ws.Namespace], ws)
		}
	}
	return byWEC, nil
}

// combinedReports are the CombinedStatuses about the object at key, found by their labels (not by
// UID), sorted by BindingPolicy (empty, not nil, when there is none).
func (s *statusReader) combinedReports(ctx context.Context, key aggregator.ObjectKey) ([]combinedReport, error) {
	csNamespace := key.Namespace
	if csNamespace == "" {
		csNamespace = controlv1alpha1.ReportNamespace
	}
	var css controlv1alpha1.CombinedStatusList
	if err := s.c.List(ctx, &css, client.InNamespace(csNamespace), client.MatchingLabels{
		controlv1alpha1.LabelCombinedStatusAPIGroup:  key.Group,
		controlv1alpha1.LabelCombinedStatusResource:  key.Resource,
		controlv1alpha1.LabelCombinedStatusNamespace: key.Namespace,
		controlv1alpha1.LabelCombinedStatusName:      key.Name,
	}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the WDS does not serve CombinedStatuses (%s): are statusfold's CRDs installed there?",
				controlv1alpha1.GroupVersion.WithResource("combinedstatuses").GroupResource())
		}
		return nil, err
	}
	out := []combinedReport{}
	for _, cs := range css.Items {
		out = append(out, combinedReport{Name: cs.Name, BindingPolicy: cs.Labels[controlv1alpha1.LabelCombinedStatusBindingPolicy], Results: cs.Results})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BindingPolicy < out[j].BindingPolicy })
	return out, nil
}

// destinations are the WECs that Bindings send the object to. A failed list is an error: the
// report would otherwise leave out every WEC that has not reported yet, without saying so.
func (s *statusReader) destinations(ctx context.Context, key aggregator.ObjectKey) ([]string, error) {
	var bindings controlv1alpha1.BindingList
	if err := s.c.List(ctx, &bindings); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the WDS does not serve Bindings (%s), so the WECs the object is sent to cannot be read: are statusfold's CRDs installed there?",
				controlv1alpha1.GroupVersion.WithResource("bindings").GroupResource())
		}
		return nil, fmt.Errorf("reading the Bindings that send the object to WECs: %w", err)
	}
	var out []string
	for i := range bindings.Items {
		b := &bindings.Items[i]
		if _, ok := aggregator.BoundIn(&b.Spec, key); ok {
			out = append(out, aggregator.Destinations(&b.Spec)...)
		}
	}
	return out, nil
}

// wecHealth is Argo CD's health of the WEC's copy: the WDS object's spec with the WEC's reported
// status, and the WEC copy's own generation (statusDetails.wecGeneration; else the status's
// observedGeneration, as the WEC's generation is not reported).
func (s *statusReader) wecHealth(gk schema.GroupKind, obj *unstructured.Unstructured, ws *controlv1alpha1.WorkStatus) (health.Result, error) {
	copyObj := obj.DeepCopy()
	var st map[string]any
	if len(ws.Status.Raw) > 0 {
		if err := json.Unmarshal(ws.Status.Raw, &st); err != nil {
			return health.Result{}, err
		}
	}
	if st == nil {
		unstructured.RemoveNestedField(copyObj.Object, "status")
	} else {
		copyObj.Object["status"] = st
	}
	switch {
	case ws.StatusDetails.WECGeneration != nil:
		copyObj.SetGeneration(*ws.StatusDetails.WECGeneration)
	default:
		if og, ok := st["observedGeneration"].(float64); ok {
			copyObj.SetGeneration(int64(og))
		}
	}
	res, _ := s.engine.Health(gk, copyObj.Object)
	return res, nil
}

// installPolicies gives the WDS's AggregationPolicies to the engine, so that the rule the report
// names is the one in force; a WDS that does not serve them has none.
func (s *statusReader) installPolicies(ctx context.Context) {
	var aps policyv1alpha1.AggregationPolicyList
	if err := s.c.List(ctx, &aps); err != nil {
		return
	}
	for i := range aps.Items {
		s.engine.SetPolicy(&aps.Items[i])
	}
}

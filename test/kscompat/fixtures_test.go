package kscompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// addWEC registers a WEC: its inventory object (an OCM ManagedCluster with labels) and its
// mailbox namespace in the ITS, where its WorkStatuses live.
func (s *space) addWEC(name string, labels map[string]string) {
	s.t.Helper()
	s.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// sourceRef names the WDS object a WorkStatus reports on.
type sourceRef struct {
	Group, Version, Resource, Kind, Namespace, Name string
}

func configMapRef(ns, name string) sourceRef {
	return sourceRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: ns, Name: name}
}

func deploymentRef(ns, name string) sourceRef {
	return sourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: ns, Name: name}
}

var workStatusGVK = schema.GroupVersionKind{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: "WorkStatus"}

// workStatusName names the WorkStatus of ref in a mailbox namespace (controllers find WorkStatuses
// by their spec.sourceRef, not by name).
func workStatusName(ref sourceRef) string {
	name := strings.ToLower(ref.Kind) + "-" + ref.Namespace + "-" + ref.Name
	if ref.Group != "" {
		name = strings.ReplaceAll(ref.Group, ".", "-") + "-" + name
	}
	return name
}

// report writes what a WEC's agent writes: a WorkStatus in the WEC's mailbox namespace, labelled
// with the origin WDS, with .status (through the status subresource) the WEC object's status.
// A nil status leaves the WorkStatus without .status.
func (s *space) report(ctx context.Context, wec string, ref sourceRef, status map[string]any) error {
	return s.reportFrom(ctx, wdsName, wec, ref, status)
}

// reportFrom is report for an object of the WDS named origin.
func (s *space) reportFrom(ctx context.Context, origin, wec string, ref sourceRef, status map[string]any) error {
	ws := &unstructured.Unstructured{}
	ws.SetGroupVersionKind(workStatusGVK)
	key := client.ObjectKey{Namespace: wec, Name: workStatusName(ref)}
	found, err := s.get(ctx, key, ws)
	if err != nil {
		return err
	}
	if !found {
		ws.SetGroupVersionKind(workStatusGVK)
		ws.SetNamespace(wec)
		ws.SetName(key.Name)
		ws.SetLabels(map[string]string{"transport.kubestellar.io/originWdsName": origin})
		ws.Object["spec"] = map[string]any{"sourceRef": map[string]any{
			"group": ref.Group, "version": ref.Version, "resource": ref.Resource, "kind": ref.Kind,
			"namespace": ref.Namespace, "name": ref.Name}}
		if err := s.c.Create(ctx, ws); err != nil {
			return fmt.Errorf("creating WorkStatus %s/%s: %w", wec, key.Name, err)
		}
	}
	if status == nil {
		return nil
	}
	ws.Object["status"] = status
	if err := s.c.Status().Update(ctx, ws); err != nil {
		return fmt.Errorf("writing the status of WorkStatus %s/%s: %w", wec, key.Name, err)
	}
	return nil
}

func expr(s string) *ksv1alpha1.Expression { e := ksv1alpha1.Expression(s); return &e }

// collector options, in the style of object builders with functional options.
type collectorOpt func(*ksv1alpha1.StatusCollectorSpec)

func filter(e string) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) { s.Filter = expr(e) }
}

func sel(name, def string) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) {
		s.Select = append(s.Select, ksv1alpha1.NamedExpression{Name: name, Def: ksv1alpha1.Expression(def)})
	}
}

func groupBy(name, def string) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) {
		s.GroupBy = append(s.GroupBy, ksv1alpha1.NamedExpression{Name: name, Def: ksv1alpha1.Expression(def)})
	}
}

func count(name string) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) {
		s.CombinedFields = append(s.CombinedFields, ksv1alpha1.NamedAggregator{Name: name, Type: ksv1alpha1.AggregatorTypeCount})
	}
}

func agg(name string, typ ksv1alpha1.AggregatorType, subject string) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) {
		s.CombinedFields = append(s.CombinedFields, ksv1alpha1.NamedAggregator{Name: name, Type: typ, Subject: expr(subject)})
	}
}

func limit(n int64) collectorOpt {
	return func(s *ksv1alpha1.StatusCollectorSpec) { s.Limit = n }
}

func statusCollector(name string, opts ...collectorOpt) *ksv1alpha1.StatusCollector {
	sc := &ksv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ksv1alpha1.StatusCollectorSpec{Limit: 20}}
	for _, o := range opts {
		o(&sc.Spec)
	}
	return sc
}

// bindingPolicy selects the WECs whose labels match clusterLabels and, in one clause, the
// objects of resource in apiGroup labelled objLabels, with the modulation given.
func bindingPolicy(name string, clusterLabels map[string]string, apiGroup, resource string,
	objLabels map[string]string, mod ksv1alpha1.DownsyncModulation) *ksv1alpha1.BindingPolicy {
	return &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: clusterLabels}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: &apiGroup, Resources: []string{resource},
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: objLabels}}},
				DownsyncModulation: mod,
			}},
		},
	}
}

// strictlyKubeStellar decodes every CombinedStatus of a namespace with KubeStellar's Go types,
// rejecting unknown fields, after removing the fields docs/rules.md "Wire format" lets statusfold add beside
// KubeStellar's (aggregationErrors[].row and .count): any other field of ours is an error.
func (s *space) strictlyKubeStellar(ctx context.Context, ns string) error {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ksv1alpha1.GroupVersion.WithKind("CombinedStatusList"))
	if err := s.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, u := range list.Items {
		results, _, _ := unstructured.NestedSlice(u.Object, "results")
		for _, r := range results {
			errs, _, _ := unstructured.NestedSlice(r.(map[string]any), "aggregationErrors")
			for _, e := range errs {
				delete(e.(map[string]any), "row")
				delete(e.(map[string]any), "count")
			}
			if len(errs) > 0 {
				_ = unstructured.SetNestedSlice(r.(map[string]any), errs, "aggregationErrors")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, results, "results")
		raw, err := json.Marshal(u.Object)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var cs ksv1alpha1.CombinedStatus
		if err := dec.Decode(&cs); err != nil {
			return fmt.Errorf("CombinedStatus %s/%s does not decode strictly with KubeStellar's types: %w", ns, u.GetName(), err)
		}
	}
	return nil
}

// combinedStatuses lists the CombinedStatuses of a namespace, decoded with KubeStellar's own Go
// types, keyed by the workload object's name (label status.kubestellar.io/name) and policy.
func (s *space) combinedStatuses(ctx context.Context, ns string) (map[string]*ksv1alpha1.CombinedStatus, error) {
	var list ksv1alpha1.CombinedStatusList
	if err := s.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]*ksv1alpha1.CombinedStatus{}
	for i := range list.Items {
		cs := &list.Items[i]
		out[cs.Labels["status.kubestellar.io/name"]+"/"+cs.Labels["status.kubestellar.io/binding-policy"]] = cs
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package wecsim

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// pairKey is one (object, WEC) pair that a Binding asks for.
type pairKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	wec             string
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

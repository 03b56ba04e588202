package index

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// AddIndexes registers the field indexes the reconciler looks things up by.
func AddIndexes(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, indexBindingObjects, func(o client.Object) []string {
		b := o.(*controlv1alpha1.Binding)
		var keys []string
		for _, bo := range rules.BoundObjects(&b.Spec) {
			keys = append(keys, bo.Key().String())
		}
		return keys
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, IndexBindingCollectors, func(o client.Object) []string {
		b := o.(*controlv1alpha1.Binding)
		return rules.BindingCollectors(&b.Spec)
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.Binding{}, IndexBindingNames, bindingNames); err != nil {
		return err
	}
	// WorkStatuses are found by object through the WEC index (itscache.WECIndex), which the
	// event handler feeds.
	return mgr.GetFieldIndexer().IndexField(ctx, &controlv1alpha1.CombinedStatus{}, IndexCombinedStatusObject, func(o client.Object) []string {
		if k, ok := rules.CombinedStatusObject(o); ok {
			return []string{k.String()}
		}
		return nil
	})
}

// BindingsListing lists, from the cache r, the Bindings that list the object key (by
// indexBindingObjects). They are shared with the cache (no deep copy): only read them.
func BindingsListing(ctx context.Context, r client.Reader, key rules.ObjectKey) ([]controlv1alpha1.Binding, error) {
	var bl controlv1alpha1.BindingList
	if err := r.List(ctx, &bl, client.MatchingFields{indexBindingObjects: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return bl.Items, nil
}

// Index names: the Bindings by each object they list (key: rules.ObjectKey's String), by each
// StatusCollector their objects name; the CombinedStatuses by the object they are about.
const (
	indexBindingObjects       = "statusfold.objects"
	IndexBindingCollectors    = "statusfold.collectors"
	IndexCombinedStatusObject = "statusfold.object"
)

// IndexBindingNames indexes Bindings by the namespace/name of each object they list.
const IndexBindingNames = "statusfold.names"

// NameKey is the IndexBindingNames key of an object: its namespace/name.
func NameKey(namespace, name string) string { return namespace + "/" + name }

// bindingNames is the IndexBindingNames index function.
func bindingNames(o client.Object) []string {
	b := o.(*controlv1alpha1.Binding)
	var keys []string
	for _, bo := range rules.BoundObjects(&b.Spec) {
		if k := NameKey(bo.Namespace, bo.Name); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

package resources

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotWatched: the object's resource is not watched where it was read (not in that
// namespace, or its informers have not listed yet). It is not a NotFound: nothing is removed on
// it.
var ErrNotWatched = errors.New("not watched there")

// Reader reads the objects of watched workload resources through one view per resource: the
// cluster-wide informer once it has listed, else the informers of the namespaces. Its reads
// return ErrNotWatched (wrapped) where no informer that has listed covers them. It serves
// unstructured objects and lists only.
func (w *Watcher) Reader() client.Reader { return reader{w} }

type reader struct{ w *Watcher }

var _ client.Reader = reader{}

func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cs, err := r.w.readers(obj.GetObjectKind().GroupVersionKind(), key.Namespace, true)
	if err != nil {
		return err
	}
	return cs[0].Get(ctx, key, obj, opts...)
}

func (r reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk := list.GetObjectKind().GroupVersionKind()
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	cs, err := r.w.readers(gvk, lo.Namespace, lo.Namespace != "")
	if err != nil || len(cs) == 1 {
		if err != nil {
			return err
		}
		return cs[0].List(ctx, list, opts...)
	}
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return fmt.Errorf("listing %s across namespaces: only unstructured lists are served", gvk)
	}
	var items []unstructured.Unstructured
	for _, c := range cs {
		part := &unstructured.UnstructuredList{}
		part.SetGroupVersionKind(ul.GroupVersionKind())
		if err := c.List(ctx, part, opts...); err != nil {
			return err
		}
		items = append(items, part.Items...)
	}
	ul.Items = items
	return nil
}

// readers returns the caches that hold the view of the resource of gvk in namespace (every
// namespace: "" and not one): the cluster-wide cache once the cluster-wide informer has listed, else
// the cache of each namespace watched, all of which must have listed.
func (w *Watcher) readers(gvk schema.GroupVersionKind, namespace string, one bool) ([]client.Reader, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.byGVK[gvk]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: %w", gvk, ErrNotWatched)
	case wt.allSynced():
		return []client.Reader{w.cache}, nil
	case one:
		inf, ok := wt.ns[namespace]
		if !ok || !inf.reg.HasSynced() || !wt.info.Namespaced {
			return nil, fmt.Errorf("%s in namespace %q: %w", wt.info.GVR, namespace, ErrNotWatched)
		}
		return []client.Reader{w.caches[namespace].cache}, nil
	}
	if len(wt.ns) == 0 {
		return nil, fmt.Errorf("%s: %w", wt.info.GVR, ErrNotWatched)
	}
	out := make([]client.Reader, 0, len(wt.ns))
	for _, ns := range slices.Sorted(maps.Keys(wt.ns)) {
		if !wt.ns[ns].reg.HasSynced() {
			return nil, fmt.Errorf("%s in namespace %q: %w", wt.info.GVR, ns, ErrNotWatched)
		}
		out = append(out, w.caches[ns].cache)
	}
	return out, nil
}

package aggregator

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// newITSInformer is the ITS cache's informer constructor (cache.Options.NewInformer): client-go's
// shared informer, listing through trimmingLister.
func newITSInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(trimmingLister{toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
}

// trimmingLister lists in pages and applies the cache's transform (trimITSObject) to each page's
// items as the page arrives. client-go's reflector gathers every page of its initial list into
// one list before its store applies the transform, and it asks for resourceVersion "0", which the
// apiserver's watch cache answers in one response whatever the limit: at 100,000 WorkStatuses the
// manager held every WorkStatus raw (its status JSON and managed fields) and, for a while, trimmed
// as well — the peak of its memory. A list at resourceVersion "0" is asked for as a consistent
// list ("": the newest data, which the watch cache serves in pages), so the raw form of at most
// one page is held at a time; the store's transform then finds each item already transformed.
type trimmingLister struct {
	lw toolscache.ListerWatcherWithContext
}

func (t trimmingLister) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.ResourceVersion == "0" && opts.ResourceVersionMatch == "" && opts.Limit > 0 && opts.Continue == "" {
		opts.ResourceVersion = ""
	}
	list, err := t.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		_, err := trimITSObject(o)
		return err
	}); err != nil {
		return nil, err
	}
	return list, nil
}

func (t trimmingLister) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return t.lw.WatchWithContext(ctx, opts)
}

// List and Watch make it a ListerWatcher, as NewSharedIndexInformer takes; client-go calls the
// context forms.
func (t trimmingLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), opts)
}

func (t trimmingLister) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), opts)
}

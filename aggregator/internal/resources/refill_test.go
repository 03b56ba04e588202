package resources

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// streamLW serves ConfigMaps of namespace a by streaming lists (client-go's default): phase 0
// streams the ConfigMap "old"; phase 1 is Forbidden; phase 2 is allowed again ("old" was deleted
// meanwhile), and the test streams its initial events itself (opened).
type streamLW struct {
	mu     sync.Mutex
	phase  int
	cur    *apiwatch.FakeWatcher
	opened chan *apiwatch.FakeWatcher // phase 2's streaming watches
	sent   bool                       // phase 2's initial-events-end bookmark was sent
}

func cm(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("a")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// endOfInitialEvents is the bookmark that ends a streaming list's initial events at rv.
func endOfInitialEvents(rv string) *unstructured.Unstructured {
	b := cm("", rv)
	b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return b
}

var forbidden = apierrors.NewForbidden(configMaps, "", errors.New("RBAC: no rule"))

func (lw *streamLW) List(metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.phase == 1 {
		return nil, forbidden
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("v1")
	l.SetKind("ConfigMapList")
	l.SetResourceVersion("2")
	return l, nil
}

func (lw *streamLW) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	fw := apiwatch.NewFakeWithChanSize(10, false)
	switch {
	case lw.phase == 1:
		return nil, forbidden
	case lw.phase == 2 && initial:
		lw.opened <- fw
	case initial:
		fw.Add(cm("old", "1"))
		fw.Action(apiwatch.Bookmark, endOfInitialEvents("1"))
	}
	lw.cur = fw
	return fw, nil
}

// TestRevokedClearedAfterRefill: after a revocation, the mark clears when the streaming list
// that refills the informer's view has ended its initial events, not when its watch opens.
func TestRevokedClearedAfterRefill(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	lw := &streamLW{opened: make(chan *apiwatch.FakeWatcher, 10)}
	changed := make(chan bool, 10) // whether the bookmark was sent at each change
	r := &Revocations{OnChange: func() { lw.mu.Lock(); changed <- lw.sent; lw.mu.Unlock() }}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	inf := r.NewInformer("a")(lw, obj, 0, toolscache.Indexers{})
	gone := make(chan struct{}, 1)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { gone <- struct{}{} }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	lw.mu.Lock()
	lw.phase = 1
	lw.cur.Stop() // the open watch ends (its timeout); the next one is Forbidden
	lw.mu.Unlock()
	wait(t, changed, "not marked")
	lw.mu.Lock()
	lw.phase = 2
	lw.mu.Unlock()
	fw := wait(t, lw.opened, "no streaming watch after access returned")
	lw.mu.Lock()
	lw.sent = true
	lw.mu.Unlock()
	fw.Action(apiwatch.Bookmark, endOfInitialEvents("3"))
	if sent := wait(t, changed, "not cleared"); !sent {
		t.Error("read access reported back when the streaming watch opened, before its initial events ended")
	}
	if _, lost := r.Lost(gvk, "a"); lost {
		t.Error("still not readable after the view was refilled")
	}
	wait(t, gone, "the refilled view still holds a/old")
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal(what)
	}
	var zero T
	return zero
}

// TestClearedAfterList: a plain watch clears a lost read access only after a list succeeded
// since it was lost; a streaming list's watch only once it passed on the bookmark that ends its
// initial events. A plain watch's request is bounded by WatchTimeout; a streaming list's watch
// is ended that long after its initial events.
func TestClearedAfterList(t *testing.T) {
	ctx := context.Background()
	key := revokedKey{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "a"}
	changed := make(chan struct{}, 10)
	r := &Revocations{WatchTimeout: 3 * time.Second, OnChange: func() { changed <- struct{}{} }}
	fw := apiwatch.NewFakeWithChanSize(10, false)
	var timeouts []int64
	lw := r.listWatch(key, &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &unstructured.UnstructuredList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
			timeouts = append(timeouts, *opts.TimeoutSeconds)
			return fw, nil
		},
	})
	r.notReadable(ctx, key, forbidden)
	wait(t, changed, "not marked")
	plain := metav1.ListOptions{TimeoutSeconds: new(int64(400))}
	if _, err := lw.WatchWithContext(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if !r.isLost(key) {
		t.Fatal("cleared by a watch without a list since the mark")
	}
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.WatchWithContext(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if r.isLost(key) {
		t.Fatal("not cleared by a watch after a list")
	}
	wait(t, changed, "no change when cleared")

	r.notReadable(ctx, key, forbidden)
	wait(t, changed, "not marked again")
	streaming := metav1.ListOptions{SendInitialEvents: new(true), TimeoutSeconds: new(int64(400))}
	w, err := lw.WatchWithContext(ctx, streaming)
	if err != nil {
		t.Fatal(err)
	}
	fw.Action(apiwatch.Bookmark, cm("", "5")) // a bookmark that ends nothing
	fw.Add(cm("x", "6"))
	for range 2 {
		<-w.ResultChan()
	}
	if !r.isLost(key) {
		t.Fatal("cleared before the initial events ended")
	}
	fw.Action(apiwatch.Bookmark, endOfInitialEvents("6"))
	<-w.ResultChan()
	wait(t, changed, "not cleared at the end of the initial events")
	ended := make(chan struct{})
	go func() {
		for range w.ResultChan() {
		}
		close(ended)
	}()
	wait(t, ended, "the streaming list's watch not ended after its list and WatchTimeout")

	if len(timeouts) != 3 || timeouts[2] != 400 {
		t.Errorf("watches' TimeoutSeconds %v; want the streaming list's (the third) left at 400", timeouts)
	}
	for range 100 {
		timeouts = append(timeouts[:0], 0)
		opts := metav1.ListOptions{}
		r.boundWatch(&opts)
		timeouts[0] = *opts.TimeoutSeconds
		if timeouts[0] < 2 || timeouts[0] > 3 {
			t.Fatalf("watch TimeoutSeconds %d; want 2..3 (WatchTimeout 3s, rounded)", timeouts[0])
		}
	}
}

// TestRevokedConfirmed: one Forbidden attempt marks nothing when the live probe can read; the
// probe's Forbidden, or a second denied attempt in a row, marks; an opened watch resets the count.
func TestRevokedConfirmed(t *testing.T) {
	ctx := context.Background()
	key := revokedKey{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "a"}
	var probeErr error
	probes := 0
	r := &Revocations{Probe: func(_ context.Context, gvk schema.GroupVersionKind, ns string) error {
		if gvk != key.gvk || ns != "a" {
			t.Errorf("probe of %s in %q; want %s in a", gvk, ns, key.gvk)
		}
		probes++
		return probeErr
	}}
	r.notReadable(ctx, key, forbidden)
	if r.isLost(key) || probes != 1 {
		t.Fatalf("one Forbidden attempt, readable by the probe: lost %v after %d probes; want not lost, 1 probe", r.isLost(key), probes)
	}
	r.watchOpened(key)
	probeErr = apierrors.NewTimeoutError("probe", 1)
	r.notReadable(ctx, key, forbidden)
	if r.isLost(key) {
		t.Fatal("marked when the probe could not tell")
	}
	r.notReadable(ctx, key, forbidden)
	if !r.isLost(key) {
		t.Fatal("two denied attempts in a row did not mark")
	}
	r.forget(key)
	probeErr = apierrors.NewUnauthorized("expired")
	r.notReadable(ctx, key, forbidden)
	if !r.isLost(key) {
		t.Fatal("the probe's Unauthorized did not mark")
	}
}

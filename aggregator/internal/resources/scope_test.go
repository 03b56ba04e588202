package resources

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestScope(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Scope
		want Scope
	}{
		{"named namespaces are sorted, each once", InNamespaces("b", "a"), InNamespaces("a", ""), Scope{Namespaces: []string{"a", "b"}}},
		{"every namespace absorbs the named", InNamespaces("a"), AllNamespaces(), AllNamespaces()},
		{"nothing and a namespace", Scope{}, InNamespaces("a"), Scope{Namespaces: []string{"a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.Union(tc.b)
			if got.All != tc.want.All || !slices.Equal(got.Namespaces, tc.want.Namespaces) {
				t.Errorf("%v ∪ %v = %+v, want %+v", tc.a, tc.b, got, tc.want)
			}
		})
	}
	if s := InNamespaces("a"); !s.Covers("a") || s.Covers("b") || s.Empty() || !(Scope{}).Empty() || !AllNamespaces().Covers("b") {
		t.Errorf("Covers/Empty wrong for %v", s)
	}
}

// fakeCache is a cache of one namespace ("" for the WDS cache): its informers list at once
// unless held, and its reads return the objects named in objects, in its namespace.
type fakeCache struct {
	cache.Cache
	namespace string
	objects   []string

	mu        sync.Mutex
	hold      bool
	informers map[string]*syncLaterInformer // by kind
	removed   []string
	stopped   chan struct{}
}

func newFakeCache(ns string, objects ...string) *fakeCache {
	return &fakeCache{namespace: ns, objects: objects, informers: map[string]*syncLaterInformer{}, stopped: make(chan struct{})}
}

func (c *fakeCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[kind]; ok {
		return inf, nil
	}
	inf := &syncLaterInformer{reg: &syncLaterReg{name: kind, done: make(chan struct{})}}
	if !c.hold {
		close(inf.reg.done)
	}
	c.informers[kind] = inf
	return inf, nil
}

func (c *fakeCache) RemoveInformer(_ context.Context, obj client.Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	delete(c.informers, kind)
	c.removed = append(c.removed, kind)
	return nil
}

// release lets the informers started while held list.
func (c *fakeCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = false
	for _, inf := range c.informers {
		if !toolscache.IsDone(inf.reg) {
			close(inf.reg.done)
		}
	}
}

func (c *fakeCache) running(kind string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.informers[kind]
	return ok
}

func (c *fakeCache) Start(ctx context.Context) error {
	<-ctx.Done()
	close(c.stopped)
	return nil
}

func (c *fakeCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if !slices.Contains(c.objects, key.Name) || (c.namespace != "" && key.Namespace != c.namespace) {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	return nil
}

func (c *fakeCache) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	ul := list.(*unstructured.UnstructuredList)
	for _, name := range c.objects {
		u := unstructured.Unstructured{}
		u.SetName(name)
		ul.Items = append(ul.Items, u)
	}
	return nil
}

// nsWatcher is a Watcher over a fake WDS cache and fake namespace caches, made on demand.
type nsWatcher struct {
	*Watcher
	wds    *fakeCache
	mu     sync.Mutex
	caches map[string]*fakeCache
	// objects are the objects each namespace holds; hold: the namespace caches' informers do not list
	objects map[string][]string
	hold    bool
	// made, if set, is told each namespace whose cache is made.
	made chan string
}

func newNSWatcher(objects map[string][]string) *nsWatcher {
	var all []string
	for _, names := range objects {
		all = append(all, names...)
	}
	n := &nsWatcher{wds: newFakeCache("", all...), caches: map[string]*fakeCache{}, objects: objects}
	n.Watcher = NewWatcher(n.wds, syncTimeoutForTests, func(ResourceInfo) toolscache.ResourceEventHandler { return nil }, logr.Discard()).
		WithNamespaceCaches(func(ns string) (cache.Cache, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			c := newFakeCache(ns, n.objects[ns]...)
			c.hold = n.hold
			n.caches[ns] = c
			if n.made != nil {
				n.made <- ns
			}
			return c, nil
		})
	return n
}

func (n *nsWatcher) cache(ns string) *fakeCache {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.caches[ns]
}

var (
	deployments = ResourceInfo{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	clusterRole = ResourceInfo{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole"}
)

func scopeOf(w *Watcher, info ResourceInfo) string {
	s, ok := w.Scopes()[info.GVR.String()]
	if !ok {
		return "none"
	}
	return s.String()
}

func listNames(t *testing.T, r client.Reader, info ResourceInfo, opts ...client.ListOption) []string {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(info.GVR.GroupVersion().WithKind(info.Kind + "List"))
	if err := r.List(context.Background(), l, opts...); err != nil {
		t.Fatalf("list %s: %v", info.GVR, err)
	}
	var names []string
	for _, u := range l.Items {
		names = append(names, u.GetName())
	}
	slices.Sort(names)
	return names
}

func getErr(r client.Reader, info ResourceInfo, ns, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	return r.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

func isNotWatched(err error) bool { return errors.Is(err, ErrNotWatched) && !apierrors.IsNotFound(err) }

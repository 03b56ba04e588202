package fanout

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/objects"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/api/scheme"
)

// fakeQueue records the keys queued, as "key" or "key after d".
type fakeQueue[K comparable] struct {
	mu    sync.Mutex
	items []string
}

func (q *fakeQueue[K]) Add(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, fmt.Sprint(k))
}

func (q *fakeQueue[K]) AddAfter(k K, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, fmt.Sprintf("%v after %s", k, d))
}

// fakeCache is the WDS cache as the handlers read it: a fake client with the reconciler's field
// indexes; the handlers under test start no informer.
type fakeCache struct {
	client.Reader
	cache.Informers
}

// indexRecorder is a manager only as index.AddIndexes uses it: it collects the field indexes.
type indexRecorder struct {
	manager.Manager
	b *fake.ClientBuilder
}

func (r indexRecorder) GetFieldIndexer() client.FieldIndexer { return r }

func (r indexRecorder) IndexField(_ context.Context, obj client.Object, field string, f client.IndexerFunc) error {
	r.b.WithIndex(obj, field, f)
	return nil
}

const (
	versionRefresh    = 5 * time.Second
	ownVersionRefresh = time.Second
)

// harness is the event handlers over a fake WDS, with their queues and state.
type harness struct {
	h         *Handlers
	objects   fakeQueue[rules.ObjectKey]
	policies  fakeQueue[string]
	kinds     fakeQueue[rules.KindKey]
	wecs      *itscache.WECIndex
	ownWrites *echo.OwnWrites
}

// newHarness returns handlers (internal binding resolution) over a WDS holding objs.
func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...)
	if err := index.AddIndexes(context.Background(), indexRecorder{b: b}); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	x := &harness{wecs: itscache.NewWECIndex(), ownWrites: echo.New(nil)}
	x.h = New(Config{WDS: fakeCache{Reader: c}, Live: c, Log: logr.Discard(),
		Objects: &x.objects, Policies: &x.policies, Kinds: &x.kinds,
		WECs: x.wecs, Reports: inputs.NewReportCache(), Pruners: inputs.NewPrunerCache(), Dests: inputs.NewDestsCache(),
		Pending: objects.NewEventTimes(), OwnWrites: x.ownWrites, ClusterGen: &atomic.Uint64{}, Orphans: &sync.Map{},
		Internal: true, VersionRefresh: versionRefresh, OwnVersionRefresh: ownVersionRefresh,
		ServesAggregationPolicies: func() bool { return true }})
	return x
}

// ownWrite makes key's last write by statusfold one that gave the object resourceVersion rv.
func (x *harness) ownWrite(key, rv string) {
	x.ownWrites.Begin(key, "test")
	x.ownWrites.End(key, rv)
}

var (
	deployGVR = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	cmGVR     = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployRes = resources.ResourceInfo{GVR: schema.GroupVersionResource(deployGVR), Kind: "Deployment", Namespaced: true, HasStatus: true}
)

// entry is a Binding's entry for the object ns/name of gvr.
func entry(gvr metav1.GroupVersionResource, name, rv string, collectors ...string) controlv1alpha1.NamespaceScopeDownsyncClause {
	return controlv1alpha1.NamespaceScopeDownsyncClause{
		NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: gvr, Namespace: "ns", Name: name, ResourceVersion: rv},
		DownsyncModulation:           controlv1alpha1.DownsyncModulation{StatusCollectors: collectors}}
}

// binding is the Binding name at resourceVersion rv, sending entries to the clusters dests.
func binding(name, rv string, dests []string, entries ...controlv1alpha1.NamespaceScopeDownsyncClause) *controlv1alpha1.Binding {
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
	b.Spec.Workload.NamespaceScope = entries
	for _, d := range dests {
		b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterId: d})
	}
	return b
}

package policies

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/policy/collector"
)

// fakeCompiler finds the problems listed by collector name.
type fakeCompiler map[string]field.ErrorList

func (f fakeCompiler) Compile(sc *controlv1alpha1.StatusCollector) (*collector.Collector, field.ErrorList, []string) {
	return nil, f[sc.Name], nil
}

// discoveryOf is a WDS's discovery serving Deployments (with a status subresource).
func discoveryOf() *fakediscovery.FakeDiscovery {
	verbs := metav1.Verbs{"get", "list", "watch", "patch"}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: verbs},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: verbs}}}}}}
}

// harness is a policies reconciler over a fake WDS and inventory, with what it wrote.
type harness struct {
	r   *Reconciler
	c   client.Client
	api *testutil.FakeAPI
	rec *events.FakeRecorder
}

func newHarness(internal bool, compiler fakeCompiler, objs ...client.Object) *harness {
	return newHarnessWith(internal, compiler, discoveryOf(), resources.Access{}, objs...)
}

// newHarnessWith is newHarness over the discovery disc, with the watches' Access.
func newHarnessWith(internal bool, compiler fakeCompiler, disc *fakediscovery.FakeDiscovery, access resources.Access, objs ...client.Object) *harness {
	h := &harness{api: &testutil.FakeAPI{}, rec: events.NewFakeRecorder(16)}
	h.c = h.api.Client(objs...)
	m, log := metrics.New(), logr.Discard()
	failures := report.NewThrottle(report.FailureWindow)
	catalog := resources.NewCatalog(disc, time.Hour)
	watches := resources.NewWatcher(readingCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme.New()}, objects: h.c}, time.Second,
		func(resources.ResourceInfo) toolscache.ResourceEventHandler {
			return toolscache.ResourceEventHandlerFuncs{}
		}, log).WithAccess(access)
	w := writer.New(h.c, nil, failures, m, nil, log, h.rec)
	h.r = New(Config{Cache: h.c, Inventory: h.c, WDS: h.c, Catalog: catalog, Watches: watches, OwnWrites: echo.New(nil),
		Compiler: compiler, Writer: w, Report: &report.Reporter{Log: log, Recorder: h.rec, Failures: failures, Kinds: catalog},
		Metrics: m, Recorder: h.rec, Internal: internal})
	return h
}

// readingCache is fake informers whose reads are those of the fake WDS.
type readingCache struct {
	*informertest.FakeInformers
	objects client.Reader
}

func (c readingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.objects.Get(ctx, key, obj, opts...)
}

func (c readingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.objects.List(ctx, list, opts...)
}

func cluster(name, env string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": env}}}
}

func deployment(name, rv, app string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
}

// policy is the BindingPolicy bp: Deployments labelled app=x, to the clusters labelled
// env=prod, with a returned status and the collectors named.
func policy(collectors ...string) *controlv1alpha1.BindingPolicy {
	apps := "apps"
	return &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bp", UID: "uid-bp", Generation: 1},
		Spec: controlv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "prod"}}},
			Downsync: []controlv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: &apps, Resources: []string{"deployments"},
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "x"}}}},
				DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true, StatusCollectors: collectors}}}}}
}

// resolved is the spec policy(collectors...) resolves to over the inventory and objects of the tests.
func resolved(collectors ...string) controlv1alpha1.BindingSpec {
	return controlv1alpha1.BindingSpec{
		Destinations: []controlv1alpha1.Destination{{ClusterId: "wec1"}},
		Workload: controlv1alpha1.DownsyncObjectClauses{NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{{
			NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
				Namespace:            "ns", Name: "d", ResourceVersion: "10"},
			DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true, StatusCollectors: collectors}}}}}
}

// available is the StatusCollectorsAvailable condition when every collector is there.
func available() []controlv1alpha1.BindingPolicyCondition {
	return []controlv1alpha1.BindingPolicyCondition{{Type: controlv1alpha1.ConditionStatusCollectorsAvailable, Status: corev1.ConditionTrue,
		Reason: "AllAvailable", Message: "every referenced StatusCollector exists and is valid", LastTransitionTime: metav1.Now()}}
}

// world is the inventory and the objects of the tests, with objs.
func world(objs ...client.Object) []client.Object {
	return append([]client.Object{cluster("wec1", "prod"), cluster("wec2", "dev"), deployment("d", "10", "x"), deployment("e", "11", "y")}, objs...)
}

package resources

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// discoveryServer serves legacy discovery over HTTP for the core group (configmaps) and the
// group slow.example.com (widgets). The slow group's document can be made to fail (503) or to
// wait until released, as an aggregated API whose server is down or slow.
type discoveryServer struct {
	*httptest.Server
	mu      sync.Mutex
	fail    bool
	hold    chan struct{} // non-nil: the slow group's document waits until it is closed
	entered chan struct{} // receives when a request for the slow group's document arrives
}

func newDiscoveryServer(t *testing.T) *discoveryServer {
	s := &discoveryServer{entered: make(chan struct{}, 16)}
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	res := func(name, kind string) []metav1.APIResource {
		return []metav1.APIResource{
			{Name: name, Kind: kind, Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch", "patch"}},
			{Name: name + "/status", Kind: kind, Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1", APIResources: res("configmaps", "ConfigMap")})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "slow.example.com/v1", Version: "v1"}
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "slow.example.com", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("/apis/slow.example.com/v1", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		s.mu.Lock()
		fail, hold := s.fail, s.hold
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		if fail {
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "slow.example.com/v1", APIResources: res("widgets", "Widget")})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *discoveryServer) set(fail bool, hold chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.hold = fail, hold
}

func newTestCatalog(t *testing.T, s *discoveryServer) *Catalog {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return NewCatalog(disc, time.Hour)
}

var (
	widgets      = schema.GroupResource{Group: "slow.example.com", Resource: "widgets"}
	gadgets      = schema.GroupResource{Group: "slow.example.com", Resource: "gadgets"}
	configmapsGR = schema.GroupResource{Resource: "configmaps"}
	secrets      = schema.GroupResource{Resource: "secrets"}
)

// TestCatalogKeepsFailedGroups: when discovery of one group fails, its resources stay as last
// seen; a resource unknown while its group fails is uncertain, not gone; the group's resources
// are current again once it is back.
func TestCatalogKeepsFailedGroups(t *testing.T) {
	s := newDiscoveryServer(t)
	c := newTestCatalog(t, s)
	if info, ok, err := c.Lookup(widgets); !ok || err != nil || !info.HasStatus || info.Kind != "Widget" {
		t.Fatalf("lookup(widgets) = %+v, %v, %v; want the Widget resource with status", info, ok, err)
	}
	s.set(true, nil)
	c.at = time.Time{} // due for a refresh
	got := c.Resources(true)
	if len(got) != 2 {
		t.Errorf("catalog after the group failed has %d resources, want 2 (configmaps, and widgets as last seen): %+v", len(got), got)
	}
	if _, ok, err := c.Lookup(widgets); !ok || err != nil {
		t.Errorf("lookup(widgets) while its group fails = %v, %v; want found", ok, err)
	}
	c.at = time.Time{}
	if _, ok, err := c.Lookup(gadgets); ok || !errors.Is(err, ErrUncertain) {
		t.Errorf("lookup(gadgets) while its group fails = %v, %v; want uncertain", ok, err)
	}
	c.at = time.Time{}
	if _, ok, err := c.Lookup(secrets); ok || err != nil {
		t.Errorf("lookup(secrets) = %v, %v; want unknown, without error (its group answered)", ok, err)
	}
	s.set(false, nil)
	c.at = time.Time{}
	c.Resources(true)
	c.mu.Lock()
	failed := len(c.failed)
	c.mu.Unlock()
	if failed != 0 {
		t.Errorf("%d groups still failed after the group came back", failed)
	}
	if _, ok, err := c.Lookup(configmapsGR); !ok || err != nil {
		t.Errorf("lookup(configmapsGR) = %v, %v", ok, err)
	}
}

// TestCatalogRefreshOutsideLock: while a refresh waits on a slow discovery, readers get the
// previous catalog at once.
func TestCatalogRefreshOutsideLock(t *testing.T) {
	s := newDiscoveryServer(t)
	c := newTestCatalog(t, s)
	if got := c.Resources(false); len(got) != 2 {
		t.Fatalf("initial catalog: %d resources, want 2", len(got))
	}
	for len(s.entered) > 0 {
		<-s.entered
	}
	hold := make(chan struct{})
	s.set(false, hold)
	c.mu.Lock()
	c.at = time.Time{}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() { c.Resources(true); close(done) }()
	<-s.entered // the refresh is waiting on discovery
	start := time.Now()
	got := c.Resources(false)
	_, ok := c.Known(widgets)
	if d := time.Since(start); d > time.Second || len(got) != 2 || !ok {
		t.Errorf("a reader during a slow refresh: %d resources after %s (widgets known: %v); want the previous 2 at once", len(got), d, ok)
	}
	close(hold)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the refresh did not finish")
	}
}

// TestCatalogReportsRecoveredGroups: a group whose discovery failed is reported once, at the
// first refresh that reads it again (its objects' retries may by then wait in a long backoff),
// and degraded says whether a refresh is worth driving meanwhile.
func TestCatalogReportsRecoveredGroups(t *testing.T) {
	s := newDiscoveryServer(t)
	c := newTestCatalog(t, s)
	var got []string
	c.OnRecovered = func(g string) { got = append(got, g) }
	refresh := func() {
		c.mu.Lock()
		c.at = time.Time{}
		c.mu.Unlock()
		c.Resources(true)
	}
	refresh()
	if len(got) != 0 || c.Degraded() {
		t.Fatalf("healthy discovery: recovered %v, degraded %v; want none, false", got, c.Degraded())
	}
	s.set(true, nil)
	refresh()
	refresh()
	if len(got) != 0 || !c.Degraded() {
		t.Fatalf("group failing: recovered %v, degraded %v; want none, true", got, c.Degraded())
	}
	s.set(false, nil)
	refresh()
	if len(got) != 1 || got[0] != "slow.example.com" || c.Degraded() {
		t.Fatalf("group back: recovered %v, degraded %v; want [slow.example.com], false", got, c.Degraded())
	}
	refresh()
	if len(got) != 1 {
		t.Errorf("recovered %v after a second healthy refresh; want it reported once", got)
	}
}

// TestExcludedAsKubeStellar: the resources no policy can select are those KubeStellar v0.30.0's
// binding controller never watches (pkg/binding: excludedGroups, excludedGroupResources), plus
// statusfold's own groups; a user's resource of the same name in another group stays selectable.
func TestExcludedAsKubeStellar(t *testing.T) {
	for _, tc := range []struct {
		gr   schema.GroupResource
		want bool
	}{
		{schema.GroupResource{Resource: "events"}, true},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, true},
		{schema.GroupResource{Resource: "nodes"}, true},
		{schema.GroupResource{Resource: "endpoints"}, true},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csistoragecapacities"}, true},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}, true},
		{schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, true},
		{schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}, true},
		{schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, true},
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, true},
		{schema.GroupResource{Group: "control.kubestellar.io", Resource: "workstatuses"}, true},
		{schema.GroupResource{Group: "control.kubestellar.io", Resource: "bindingpolicies"}, true},
		{schema.GroupResource{Group: "statusfold.dev", Resource: "contentclassifiers"}, true},
		{schema.GroupResource{Group: "x.statusfold.dev", Resource: "things"}, true},
		{schema.GroupResource{Resource: "configmaps"}, false},
		{schema.GroupResource{Resource: "services"}, false},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, false},
		{schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, false},
		{schema.GroupResource{Group: "example.com", Resource: "endpoints"}, false},
		{schema.GroupResource{Group: "example.com", Resource: "nodes"}, false},
		{schema.GroupResource{Group: "notstatusfold.dev", Resource: "things"}, false},
	} {
		if got := excluded(tc.gr); got != tc.want {
			t.Errorf("excluded(%v) = %v, want %v", tc.gr, got, tc.want)
		}
	}
}

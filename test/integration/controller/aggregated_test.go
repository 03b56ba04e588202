package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// An aggregated API for the tests: the group front.example.com/v1 is registered with an
// APIService whose server is an HTTPS reverse proxy in the test process. The proxy serves it from
// the CRD group backend.example.com/v1 of the same apiserver, rewriting the group in paths and
// bodies. Stopping the proxy takes the aggregated group down as a failing extension apiserver
// would; starting it on the same port brings it back.
const (
	frontGroup   = "front.example.com"
	backendGroup = "backend.example.com"
)

type aggregatedAPI struct {
	t       *testing.T
	addr    string // 127.0.0.1:port, the same across restarts
	backend *url.URL
	rt      http.RoundTripper

	mu  sync.Mutex
	srv *httptest.Server
}

func newAggregatedAPI(t *testing.T, cp *framework.ControlPlane) *aggregatedAPI {
	t.Helper()
	backend, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	a := &aggregatedAPI{t: t, addr: addr, backend: backend, rt: rt}
	t.Cleanup(a.stop)
	return a
}

// start serves the aggregated group on a.addr.
func (a *aggregatedAPI) start() {
	a.t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port of a stopped server may take a moment to be free
		if l, err = net.Listen("tcp", a.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		a.t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Transport: a.rt,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(a.backend)
			r.Out.URL.Path = strings.Replace(r.In.URL.Path, "/apis/"+frontGroup+"/", "/apis/"+backendGroup+"/", 1)
			r.Out.URL.RawPath = ""
			for _, h := range []string{"Authorization", "X-Remote-User", "X-Remote-Group", "Accept-Encoding"} {
				r.Out.Header.Del(h)
			}
			for h := range r.Out.Header {
				if strings.HasPrefix(h, "X-Remote-Extra-") || strings.HasPrefix(h, "Impersonate-") {
					r.Out.Header.Del(h)
				}
			}
			if r.In.Body != nil && r.In.ContentLength != 0 {
				body, _ := io.ReadAll(r.In.Body)
				body = bytes.ReplaceAll(body, []byte(frontGroup+"/"), []byte(backendGroup+"/"))
				r.Out.Body = io.NopCloser(bytes.NewReader(body))
				r.Out.ContentLength = int64(len(body))
				r.Out.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &replacingReader{r: resp.Body, old: []byte(backendGroup + "/"), new: []byte(frontGroup + "/")}
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	mux := http.NewServeMux()
	mux.Handle("/apis/"+frontGroup+"/", proxy)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = l
	srv.StartTLS()
	a.mu.Lock()
	a.srv = srv
	a.mu.Unlock()
}

// stop ends the server and every connection to it (watches included).
func (a *aggregatedAPI) stop() {
	a.mu.Lock()
	srv := a.srv
	a.srv = nil
	a.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// replacingReader replaces old with new in what it reads, chunk by chunk (a watch's events each
// arrive in one chunk).
type replacingReader struct {
	r        io.ReadCloser
	old, new []byte
	pending  []byte
}

func (r *replacingReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		buf := make([]byte, 64<<10)
		n, err := r.r.Read(buf)
		if n > 0 {
			r.pending = bytes.ReplaceAll(buf[:n], r.old, r.new)
		}
		if err != nil && len(r.pending) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *replacingReader) Close() error { return r.r.Close() }

// register creates the backend CRD, the ExternalName Service and the APIService of the front
// group, and waits until the apiserver reports the APIService available.
func (a *aggregatedAPI) register(cp *framework.ControlPlane) {
	t := a.t
	t.Helper()
	c := cp.Client
	ctx := context.Background()
	crd := []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.` + backendGroup + `}
spec:
  group: ` + backendGroup + `
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	if _, stderr, err := cp.Kubectl(ctx, crd, "apply", "-f", "-"); err != nil {
		t.Fatalf("backend CRD: %v: %s", err, stderr)
	}
	_, port, _ := net.SplitHostPort(a.addr)
	p, _ := strconv.Atoi(port)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "front-api"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	create(t, c, svc)
	apiService := []byte(fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.%s}
spec:
  group: %s
  version: v1
  service: {namespace: default, name: front-api, port: %d}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 1000
  versionPriority: 15
`, frontGroup, frontGroup, p))
	if _, stderr, err := cp.Kubectl(ctx, apiService, "apply", "-f", "-"); err != nil {
		t.Fatalf("APIService: %v: %s", err, stderr)
	}
	a.waitAvailable(cp, "True")
}

// waitAvailable waits until the APIService's Available condition has the given status and, for
// "True", discovery lists the front group's resources.
func (a *aggregatedAPI) waitAvailable(cp *framework.ControlPlane, status string) {
	a.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		out, _, err := cp.Kubectl(context.Background(), nil, "get", "apiservice", "v1."+frontGroup,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if err == nil && strings.TrimSpace(out) == status {
			if status != "True" {
				return
			}
			if l, err := cp.Discovery.ServerResourcesForGroupVersion(frontGroup + "/v1"); err == nil && len(l.APIResources) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("APIService v1.%s: Available is %q, want %q", frontGroup, out, status)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// runAggregated starts a control plane with the aggregated group registered and serving, and
// the inventory objects of the WECs named (each labelled name=<WEC>).
func runAggregated(t *testing.T, wecs ...string) (*framework.ControlPlane, *aggregatedAPI) {
	t.Helper()
	cp := framework.RunControlPlane(t)
	api := newAggregatedAPI(t, cp)
	api.start()
	api.register(cp)
	for _, w := range wecs {
		addCluster(t, cp.Client, w, map[string]string{"name": w})
	}
	return cp, api
}

var thingGVK = schema.GroupVersionKind{Group: backendGroup, Version: "v1", Kind: "Thing"}

// TestAggregatedAPIDown: an aggregated API group goes down mid-run. Nothing of its objects is
// removed — no CombinedStatus, no returned status, no Binding entry — while it is down, and
// everything converges when it comes back.
func TestAggregatedAPIDown(t *testing.T) {
	// The Thing is one stored object under two resources (front.example.com through the proxy,
	// backend.example.com as the CRD). This test once failed by chance: the start-up sweep of
	// labelled objects found it under backend.example.com and removed the return written under
	// front.example.com (docs/controller.md "Failures"); TestSameObjectUnderTwoResources makes
	// that case happen every time.
	cp, api := runAggregated(t, "wec1", "wec2")
	c := cp.Client
	create(t, c, kubestellarDocCollectors()...)
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	const ns = "aggregated"
	thing := customObject(t, c, thingGVK, ns, "t1")
	ref := controlv1alpha1.SourceRef{Group: frontGroup, Version: "v1", Resource: "things", Kind: "Thing", Namespace: ns, Name: "t1"}
	create(t, c, policy(ns, []string{"wec1"}, clause(frontGroup, "things", ns, []string{"t1"}, singleton, collectors("count-wecs"))))
	report(t, c, "wec1", ref, map[string]any{"phase": "Ready", "ready": int64(1)}, applied(1))
	frontThing := &unstructured.Unstructured{}
	frontThing.SetGroupVersionKind(schema.GroupVersionKind{Group: frontGroup, Version: "v1", Kind: "Thing"})
	frontThing.SetNamespace(ns)
	frontThing.SetName("t1")
	frontThing.SetUID(thing.GetUID())
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	expectThing(t, c, "Ready", "1")

	// Down. Inputs keep changing while it is: a new report, a policy update (re-resolution),
	// and more than one catalog refresh.
	api.stop()
	api.waitAvailable(cp, "False")
	report(t, c, "wec1", ref, map[string]any{"phase": "Degraded", "ready": int64(0)}, applied(1))
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Labels = map[string]string{"touched": "yes"}
		bp.Spec.Downsync[0].StatusCollectors = []string{"count-wecs", "full-status"}
	})
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := combinedStatus(c, frontThing, ns, ns); err != nil {
			t.Fatalf("CombinedStatus while the aggregated API is down: %v", err)
		}
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Spec.Workload.NamespaceScope) != 1 {
			t.Fatalf("Binding while the aggregated API is down lists %d objects, want 1 (t1)", len(b.Spec.Workload.NamespaceScope))
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(thingGVK)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "" {
			mf, _ := json.Marshal(u.GetManagedFields())
			t.Fatalf("returned status removed while the aggregated API is down: %v; labels %v; managedFields %s", u.Object["status"], u.GetLabels(), mf)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Back: the report made while it was down, and the policy change, arrive.
	api.start()
	api.waitAvailable(cp, "True")
	expectThing(t, c, "Degraded", "0")
	expectResult(t, c, frontThing, ns, ns, "count-wecs", [][]string{{"1"}})
	eventually(t, "the full-status result added while the API was down", func() error {
		cs, err := combinedStatus(c, frontThing, ns, ns)
		if err != nil {
			return err
		}
		r, err := result(cs, "full-status")
		if err != nil {
			return err
		}
		if len(r.Rows) != 1 || len(r.Rows[0].Columns) != 2 || r.Rows[0].Columns[0].String == nil || *r.Rows[0].Columns[0].String != "wec1" {
			return fmt.Errorf("rows %+v", r.Rows)
		}
		return nil
	})
}

// TestSameObjectUnderTwoResources: the Thing is bound under the CRD's group without a return and
// under the aggregated group with one. The evaluation under the CRD's group must leave the return
// alone — while both groups serve, and while the aggregated one is down (its watch's cache still
// shows the object with the same UID; a read that fails would make the evaluation retry).
func TestSameObjectUnderTwoResources(t *testing.T) {
	cp, api := runAggregated(t, "wec1")
	c := cp.Client
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	const ns = "aggregated"
	customObject(t, c, thingGVK, ns, "t1")
	ref := controlv1alpha1.SourceRef{Group: frontGroup, Version: "v1", Resource: "things", Kind: "Thing", Namespace: ns, Name: "t1"}
	create(t, c,
		policy("front", []string{"wec1"}, clause(frontGroup, "things", ns, []string{"t1"}, singleton)),
		policy("backend", []string{"wec1"}, clause(backendGroup, "things", ns, []string{"t1"})))
	report(t, c, "wec1", ref, map[string]any{"phase": "Ready", "ready": int64(1)}, applied(1))
	expectThing(t, c, "Ready", "1")
	eventually(t, "the backend Binding lists t1", func() error {
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: "backend"}, &b); err != nil {
			return err
		}
		if len(b.Spec.Workload.NamespaceScope) != 1 {
			return fmt.Errorf("Binding backend lists %d objects, want 1", len(b.Spec.Workload.NamespaceScope))
		}
		return nil
	})
	stays := func(phase string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(thingGVK)
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			if got != phase || u.GetLabels()[aggregator.LabelExecutingCount] != "1" {
				mf, _ := json.Marshal(u.GetManagedFields())
				t.Fatalf("returned status %v, labels %v: want phase %s and executing-count 1; managedFields %s", u.Object["status"], u.GetLabels(), phase, mf)
			}
		}
	}
	// A change of the object under either resource evaluates both keys.
	report(t, c, "wec1", ref, map[string]any{"phase": "Degraded", "ready": int64(0)}, applied(1))
	expectThing(t, c, "Degraded", "0")
	stays("Degraded")

	api.stop()
	api.waitAvailable(cp, "False")
	// The backend key is evaluated while the front group is down: a change of the Thing.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(thingGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "t1"}, u); err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(map[string]string{"touched": "while-down"})
	if err := c.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	stays("Degraded")
}

// expectThing waits until the Thing's status has the given phase and ready count.
func expectThing(t *testing.T, c client.Client, phase, ready string) {
	t.Helper()
	expectStatus(t, c, thingGVK, "aggregated", "t1", func(status map[string]any) error {
		if status["phase"] != phase || fmt.Sprint(status["ready"]) != ready {
			return fmt.Errorf("status %v, want phase %s ready %s", status, phase, ready)
		}
		return nil
	})
}

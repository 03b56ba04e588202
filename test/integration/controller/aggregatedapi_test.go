package controller

import (
	"bytes"
	"context"
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
	"k8s.io/client-go/rest"

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

package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/kubeflex"
)

// hostingObjects are a hosting cluster's ControlPlanes as KubeStellar's core chart makes them: a
// WDS of type k8s and an ITS of type vcluster, with their kubeconfig Secrets.
func hostingObjects() []client.Object {
	cp := func(name, role, typ, secret string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kubeflex.ControlPlaneGVK)
		u.SetName(name)
		u.SetLabels(map[string]string{kubeflex.TypeLabel: role})
		_ = unstructured.SetNestedField(u.Object, typ, "spec", "type")
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"namespace": name + "-system", "name": secret,
			"key": "kubeconfig", "inClusterKey": "kubeconfig-incluster"}, "status", "secretRef")
		return u
	}
	secret := func(cp, name, host string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cp + "-system", Name: name},
			Data: map[string][]byte{"kubeconfig": kubeconfigBytes(host)}}
	}
	return []client.Object{cp("wds1", "wds", "k8s", "admin-kubeconfig"), secret("wds1", "admin-kubeconfig", "https://wds1"),
		cp("its1", "its", "vcluster", "vc-vcluster"), secret("its1", "vc-vcluster", "https://its1")}
}

func kubeconfigBytes(host string) []byte {
	return []byte(`{"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "` + host + `"}}],
"users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}], "current-context": "x"}`)
}

// runKubeflexManager runs `statusfold manager --kubeflex args…` against the fake hosting cluster
// c; run is what the manager would run.
func runKubeflexManager(t *testing.T, c client.Client, run func(context.Context, aggregator.Config) error, args ...string) error {
	t.Helper()
	o := &managerOptions{logConfig: textlogger.NewConfig()}
	cmd := managerCommand(o, run)
	o.spaces.finder = func() (kubeflex.Finder, error) {
		return kubeflex.Finder{Client: c, Hosting: &rest.Config{Host: "https://hosting"}}, nil
	}
	cmd.SetArgs(append([]string{"--kubeflex", "--webhooks=false", "--health-probe-bind-address=0", "--kubeflex-recheck-interval=10ms"}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

func fakeHosting(objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func TestManagerKubeflexFindsSpaces(t *testing.T) {
	c := fakeHosting(hostingObjects()...)
	var got aggregator.Config
	err := runKubeflexManager(t, c, func(_ context.Context, cfg aggregator.Config) error { got = cfg; return nil },
		"--wds-name=wds1", "--leader-elect")
	if err != nil {
		t.Fatal(err)
	}
	if got.WDS == nil || got.WDS.Host != "https://wds1" || got.ITSConfig == nil || got.ITSConfig.Host != "https://its1" {
		t.Fatalf("WDS %v, ITS %v: want https://wds1 and https://its1 (the only ITS)", got.WDS, got.ITSConfig)
	}
	if got.WDSName != "wds1" || got.LeaderElectionConfig == nil || got.LeaderElectionConfig.Host != "https://hosting" || got.LeaderElectionNamespace != "" {
		t.Errorf("WDSName %q, Lease in %v namespace %q: want wds1, and the Lease in the hosting cluster in the pod's namespace (a WDS of type k8s)",
			got.WDSName, got.LeaderElectionConfig, got.LeaderElectionNamespace)
	}
	err = runKubeflexManager(t, c, func(_ context.Context, cfg aggregator.Config) error { got = cfg; return nil },
		"--wds-name=wds1", "--wds-kubeconfig", writeKubeconfig(t))
	if err != nil || got.WDS.Host != "https://127.0.0.1:6443" || got.ITSConfig.Host != "https://its1" {
		t.Errorf("--wds-kubeconfig with --kubeflex: err %v, WDS %v, ITS %v: the file must win for the WDS", err, got.WDS, got.ITSConfig)
	}
}

// A rotated kubeconfig Secret stops the manager, and the command returns nil (exit 0) for the
// Deployment to restart it with the new kubeconfig.
func TestManagerKubeflexExitsOnRotation(t *testing.T) {
	c := fakeHosting(hostingObjects()...)
	started := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		<-started
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "its1-system", Name: "vc-vcluster"},
			Data: map[string][]byte{"kubeconfig": kubeconfigBytes("https://its1-rotated")}}
		_ = c.Update(context.Background(), s)
	}()
	err := runKubeflexManager(t, c, func(ctx context.Context, _ aggregator.Config) error {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil
	}, "--wds-name=wds1", "--its-name=its1")
	if err != nil {
		t.Fatalf("exit after rotation: %v, want nil", err)
	}
	select {
	case <-stopped:
	case <-time.After(time.Second):
		t.Fatal("the manager was not stopped")
	}
}

// While the WDS's ControlPlane does not exist, the manager waits: /healthz answers ok (no restart),
// /readyz fails saying what is missing, and the end of the context ends the wait with an error.
func TestManagerKubeflexWaitsVisibly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	o := &managerOptions{logConfig: textlogger.NewConfig()}
	cmd := managerCommand(o, func(context.Context, aggregator.Config) error { return errors.New("must not run") })
	o.spaces.finder = func() (kubeflex.Finder, error) { return kubeflex.Finder{Client: fakeHosting()}, nil }
	cmd.SetArgs([]string{"--kubeflex", "--webhooks=false", "--health-probe-bind-address=" + addr, "--wds-name=wds1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	get := func(path string) (int, string) {
		for range 100 {
			resp, err := http.Get("http://" + addr + path)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode, string(body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("GET %s: no answer", path)
		return 0, ""
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d while waiting, want 200", code)
	}
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `wds: ControlPlane "wds1" not found`) {
		t.Errorf("/readyz %d %q while waiting, want 503 naming the missing ControlPlane", code, body)
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), `--kubeflex: the WDS "wds1"`) {
		t.Errorf("end of the wait: %v", err)
	}
}

package resources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
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

var configMaps = schema.GroupResource{Resource: "configmaps"}

func TestAccessLost(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://wds", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"forbidden", apierrors.NewForbidden(configMaps, "", errors.New("RBAC: no rule")), true},
		{"forbidden, wrapped", fmt.Errorf("listing: %w", apierrors.NewForbidden(configMaps, "", errors.New("no"))), true},
		{"unauthorized", apierrors.NewUnauthorized("token expired"), true},
		{"timeout", apierrors.NewTimeoutError("list", 1), false},
		{"server timeout", apierrors.NewServerTimeout(configMaps, "list", 1), false},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), false},
		{"expired resourceVersion", apierrors.NewResourceExpired("too old"), false},
		{"connection refused", refused, false},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AccessLost(tc.err); got != tc.want {
				t.Errorf("AccessLost(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// switchingLW lists and watches ConfigMaps, answering Forbidden while denied is set; it serves
// no streaming lists.
type switchingLW struct {
	denied  atomic.Bool
	timeout atomic.Int64 // the TimeoutSeconds of the last watch
}

func (lw *switchingLW) List(metav1.ListOptions) (runtime.Object, error) {
	if lw.denied.Load() {
		return nil, apierrors.NewForbidden(configMaps, "", errors.New("RBAC: no rule"))
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("v1")
	l.SetKind("ConfigMapList")
	l.SetResourceVersion("1")
	return l, nil
}

func (lw *switchingLW) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		// An apiserver without streaming lists: the reflector lists, then watches.
		return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
	}
	if opts.TimeoutSeconds != nil {
		lw.timeout.Store(*opts.TimeoutSeconds)
	}
	if lw.denied.Load() {
		return nil, apierrors.NewForbidden(configMaps, "", errors.New("RBAC: no rule"))
	}
	return apiwatch.NewFake(), nil
}

// TestRevocations runs an informer made by Revocations.NewInformer whose list and watch are
// Forbidden, then allowed: its resource is not readable, then readable again, each change
// announced by OnChange; its watches are bounded by WatchTimeout.
func TestRevocations(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	changed := make(chan struct{}, 10)
	r := &Revocations{WatchTimeout: 4 * time.Second, OnChange: func() { changed <- struct{}{} }}
	lw := &switchingLW{}
	lw.denied.Store(true)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	inf := r.NewInformer("a")(lw, obj, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)

	waitChange := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("no change: %s", what)
		}
	}
	waitChange("not readable")
	rv, ok := r.Lost(gvk, "a")
	if !ok || !apierrors.IsForbidden(rv.Err) || rv.Since.IsZero() {
		t.Fatalf("Lost(a) = %+v, %v; want Forbidden since a time", rv, ok)
	}
	if _, ok := r.Lost(gvk, ""); ok {
		t.Error("the cluster-wide informer of ConfigMaps lost access: it has none")
	}
	lw.denied.Store(false)
	waitChange("readable again")
	if rv, ok := r.Lost(gvk, "a"); ok {
		t.Errorf("Lost(a) = %+v after a watch was allowed", rv)
	}
	if s := lw.timeout.Load(); s < 2 || s > 4 {
		t.Errorf("watch TimeoutSeconds %d, want 2..4 (WatchTimeout 4s)", s)
	}
}

// TestRevokedMessage: the error of a running informer that lost access names the resource, the
// namespaces and since when its view is frozen.
func TestRevokedMessage(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	info := ResourceInfo{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	nr := lostAccess(info, Revoked{Since: since, Err: apierrors.NewForbidden(configMaps, "", errors.New("no"))}, []string{"a"})
	msg := nr.Error()
	for _, part := range []string{"configmaps may no longer be read", "in namespace a", "frozen since 2026-01-02T03:04:05Z"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if nr.Reason != ReasonForbidden {
		t.Errorf("reason %s, want %s", nr.Reason, ReasonForbidden)
	}
	if un := lostAccess(info, Revoked{Since: since, Err: apierrors.NewUnauthorized("expired")}, nil); un.Reason != ReasonUnauthorized {
		t.Errorf("reason %s, want %s", un.Reason, ReasonUnauthorized)
	}
}

func TestWithRevoked(t *testing.T) {
	lost := func(ns ...string) *NotReadableError {
		return &NotReadableError{GR: configMaps, Reason: ReasonForbidden, Namespaces: ns, Since: time.Now()}
	}
	other := errors.New("initial list not done")
	for _, tc := range []struct {
		name string
		err  error
		nr   *NotReadableError
		want []string // the namespaces of the result; nil: all of them
		same error    // the result, when it is one of the inputs
	}{
		{name: "no error", nr: lost("a"), want: []string{"a"}},
		{name: "another error stays", err: other, nr: lost("a"), same: other},
		{name: "namespaces of both", err: lost("c", "b"), nr: lost("a", "b"), want: []string{"a", "b", "c"}},
		{name: "whole resource denied", err: lost(), nr: lost("a"), want: nil},
		{name: "whole resource revoked", err: lost("b"), nr: lost(), want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withRevoked(tc.err, tc.nr)
			if tc.same != nil {
				if got != tc.same {
					t.Errorf("got %v, want %v", got, tc.same)
				}
				return
			}
			nr, ok := IsNotReadable(got)
			if !ok {
				t.Fatalf("got %v, want a NotReadableError", got)
			}
			if fmt.Sprint(nr.Namespaces) != fmt.Sprint(tc.want) {
				t.Errorf("got %v (namespaces %v), want namespaces %v", got, nr.Namespaces, tc.want)
			}
		})
	}
}

// TestWatcherRevoked: the Watcher reports a running informer that lost read access as not
// readable (EnsureAll, Readable) — in its namespace for a namespace's informer, the whole
// resource for the cluster-wide one — until it watches again, and forgets it when it stops.
func TestWatcherRevoked(t *testing.T) {
	n := newNSWatcher(map[string][]string{"a": {"a1"}, "b": {"b1"}})
	r := &Revocations{}
	n.WithRevocations(r)
	ctx, gvk := context.Background(), deployments.GVK()
	want := Want{Info: deployments, Scope: InNamespaces("a", "b")}
	if err := n.Ensure(ctx, deployments, want.Scope); err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(deployments.GVR.GroupResource(), "", errors.New("no"))
	r.notReadable(ctx, revokedKey{gvk: gvk, namespace: "b"}, forbidden)
	for name, err := range map[string]error{"Ensure": n.Ensure(ctx, deployments, want.Scope), "Readable": n.Readable(ctx, want)} {
		nr, ok := IsNotReadable(err)
		if !ok || fmt.Sprint(nr.Namespaces) != "[b]" || nr.Since.IsZero() {
			t.Errorf("%s: %v; want not readable in b since a time", name, err)
		}
	}
	if err := n.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Errorf("Ensure in a only: %v; want nil (a's informer may read)", err)
	}
	r.readable(revokedKey{gvk: gvk, namespace: "b"}, false)
	if err := n.Ensure(ctx, deployments, want.Scope); err != nil {
		t.Errorf("Ensure after b watches again: %v", err)
	}

	r.notReadable(ctx, revokedKey{gvk: gvk, namespace: "b"}, forbidden)
	if _, err := n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{deployments.GVR.String(): InNamespaces("a")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lost(gvk, "b"); ok {
		t.Error("b's informer stopped; its lost access is still remembered")
	}

	if err := n.Ensure(ctx, deployments, AllNamespaces()); err != nil {
		t.Fatal(err)
	}
	r.notReadable(ctx, revokedKey{gvk: gvk}, forbidden)
	nr, ok := IsNotReadable(n.Ensure(ctx, deployments, InNamespaces("a")))
	if !ok || len(nr.Namespaces) != 0 {
		t.Errorf("cluster-wide informer revoked: %v; want the whole resource not readable", nr)
	}
}

package resources

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// probeIn is a probe that permits the namespaces in allowed only ("": cluster-wide), and
// records what it was asked.
type probeIn struct {
	mu      sync.Mutex
	allowed map[string]bool
	asked   []string
}

func (p *probeIn) probe(_ context.Context, info ResourceInfo, ns string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, ns)
	if p.allowed[ns] {
		return nil
	}
	return apierrors.NewForbidden(info.GVR.GroupResource(), "", errors.New("RBAC: not allowed in "+ns))
}

func (p *probeIn) allow(ns string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allowed[ns] = true
}

func expectForbiddenIn(t *testing.T, err error, namespaces ...string) {
	t.Helper()
	nr, ok := IsNotReadable(err)
	if !ok || nr.Reason != ReasonForbidden || !slices.Equal(nr.Namespaces, namespaces) {
		t.Fatalf("error %v; want Forbidden in %v", err, namespaces)
	}
}

// The informer of a single namespace is probed in that namespace: a Role there suffices when
// the cluster-wide list is Forbidden. A Forbidden namespace keeps only its own informer from
// starting, and is probed again on the next Ensure, so access coming back is seen.
func TestProbeInTheInformersNamespace(t *testing.T) {
	n := newNSWatcher(map[string][]string{"a": {"a1"}, "b": {"b1"}})
	p := &probeIn{allowed: map[string]bool{"a": true}}
	n.WithAccess(Access{Probe: p.probe})
	ctx := context.Background()

	if err := n.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Fatalf("ensure in a, readable there only: %v", err)
	}
	expectScope(t, n.Watcher, deployments, "a")
	expectList(t, n.Watcher, deployments, "a1")
	if !slices.Equal(p.asked, []string{"a"}) {
		t.Fatalf("probed %q, want a only", p.asked)
	}

	expectForbiddenIn(t, n.Ensure(ctx, deployments, InNamespaces("a", "b")), "b")
	expectScope(t, n.Watcher, deployments, "a")
	if !n.Watching(deployments, "a") || n.cache("b") != nil {
		t.Fatalf("after b was Forbidden: watching a %v, b's cache made %v; want a's informer only", n.Watching(deployments, "a"), n.cache("b") != nil)
	}
	expectForbiddenIn(t, n.Readable(ctx, Want{Info: deployments, Scope: InNamespaces("b")}), "b")
	if err := n.Readable(ctx, Want{Info: deployments, Scope: InNamespaces("a")}); err != nil {
		t.Errorf("Readable in a: %v", err)
	}
	expectForbiddenIn(t, n.Ensure(ctx, deployments, AllNamespaces()))
	expectScope(t, n.Watcher, deployments, "a")

	p.allow("b")
	if err := n.Ensure(ctx, deployments, InNamespaces("b")); err != nil {
		t.Fatalf("ensure in b once allowed: %v", err)
	}
	expectScope(t, n.Watcher, deployments, "a,b")
	expectList(t, n.Watcher, deployments, "a1", "b1")

	// Cluster-wide informers (namespace caches off) keep the cluster-wide probe.
	plain := NewWatcher(newFakeCache("", "a1"), syncTimeoutForTests, n.handler, n.log).WithAccess(Access{Probe: p.probe})
	expectForbiddenIn(t, plain.Ensure(ctx, deployments, InNamespaces("a")))
	expectScope(t, plain, deployments, "none")
}

package resources

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// syncTimeoutForTests bounds the waits for informers that a test holds from listing.
const syncTimeoutForTests = 200 * time.Millisecond

func expectScope(t *testing.T, w *Watcher, info ResourceInfo, want string) {
	t.Helper()
	if got := scopeOf(w, info); got != want {
		t.Fatalf("%s watched in %q, want %q", info.GVR.Resource, got, want)
	}
}

func expectList(t *testing.T, w *Watcher, info ResourceInfo, want ...string) {
	t.Helper()
	if got := listNames(t, w.Reader(), info); !slices.Equal(got, want) {
		t.Fatalf("the view of %s lists %v, want %v", info.GVR.Resource, got, want)
	}
}

// A resource selected in named namespaces is watched there only, each namespace in its own
// cache; widening adds informers without restarting the others, narrowing stops only those no
// longer wanted, and the switches to and from a cluster-wide informer happen once the new
// informers have listed. Readers see one view throughout.
func TestNamespaceScopedWatches(t *testing.T) {
	n := newNSWatcher(map[string][]string{"a": {"a1", "a2"}, "b": {"b1"}, "c": {"c1"}})
	ctx, key := context.Background(), deployments.GVR.String()

	if err := n.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Fatal(err)
	}
	expectScope(t, n.Watcher, deployments, "a")
	if n.wds.running("Deployment") || !n.cache("a").running("Deployment") {
		t.Fatalf("informers: cluster-wide %v, in a %v; want only a's", n.wds.running("Deployment"), n.cache("a").running("Deployment"))
	}
	if !n.Watching(deployments, "a") || n.Watching(deployments, "b") {
		t.Errorf("Watching a %v, b %v; want true, false", n.Watching(deployments, "a"), n.Watching(deployments, "b"))
	}
	expectList(t, n.Watcher, deployments, "a1", "a2")
	if err := getErr(n.Reader(), deployments, "b", "b1"); !isNotWatched(err) {
		t.Errorf("reading outside the scope: %v, want ErrNotWatched (never NotFound)", err)
	}

	// Widening to b keeps a's informer.
	if err := n.Ensure(ctx, deployments, InNamespaces("b")); err != nil {
		t.Fatal(err)
	}
	expectScope(t, n.Watcher, deployments, "a,b")
	expectList(t, n.Watcher, deployments, "a1", "a2", "b1")
	if len(n.cache("a").removed) != 0 {
		t.Errorf("a's informer restarted while widening: removed %v", n.cache("a").removed)
	}

	// Narrowing back to a stops b's informer and its cache only.
	narrowed, err := n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{key: InNamespaces("a")})
	if err != nil || len(narrowed) != 1 || narrowed[0].Kept.String() != "a" {
		t.Fatalf("narrowed %+v, %v; want deployments kept in a", narrowed, err)
	}
	<-n.cache("b").stopped
	expectScope(t, n.Watcher, deployments, "a")
	expectList(t, n.Watcher, deployments, "a1", "a2")

	// Cluster-wide: once the WDS cache's informer has listed, the namespaces' informers stop.
	if err := n.Ensure(ctx, deployments, AllNamespaces()); err != nil {
		t.Fatal(err)
	}
	<-n.cache("a").stopped
	expectScope(t, n.Watcher, deployments, "*")
	expectList(t, n.Watcher, deployments, "a1", "a2", "b1", "c1")

	// From cluster-wide to c: c's informer first, then the cluster-wide one stops.
	narrowed, err = n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{key: InNamespaces("c")})
	if err != nil || len(narrowed) != 1 || narrowed[0].Kept.String() != "c" {
		t.Fatalf("narrowed %+v, %v; want deployments kept in c", narrowed, err)
	}
	if n.wds.running("Deployment") {
		t.Error("the cluster-wide informer still runs after narrowing to c")
	}
	expectList(t, n.Watcher, deployments, "c1")

	// Wanted nowhere: every informer stops.
	narrowed, err = n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{})
	if err != nil || len(narrowed) != 1 || !narrowed[0].Kept.Empty() {
		t.Fatalf("narrowed %+v, %v; want deployments not watched", narrowed, err)
	}
	<-n.cache("c").stopped
	expectScope(t, n.Watcher, deployments, "none")
}

// A new informer that has not listed yet changes nothing readers see: widening to cluster-wide
// keeps reading the namespaces' informers, and narrowing from cluster-wide keeps the
// cluster-wide informer, until the new ones have listed.
func TestScopeSwitchesOnlyOnceListed(t *testing.T) {
	n := newNSWatcher(map[string][]string{"a": {"a1"}, "b": {"b1"}})
	ctx, key := context.Background(), deployments.GVR.String()
	if err := n.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Fatal(err)
	}
	n.wds.hold = true
	if err := n.Ensure(ctx, deployments, AllNamespaces()); err == nil {
		t.Fatal("ensure of a cluster-wide informer that does not list: no error")
	}
	if !n.Watching(deployments, "a") || n.Watching(deployments, "b") {
		t.Errorf("while the cluster-wide informer lists: Watching a %v, b %v; want true, false", n.Watching(deployments, "a"), n.Watching(deployments, "b"))
	}
	expectList(t, n.Watcher, deployments, "a1")
	n.wds.release()
	if err := n.Ensure(ctx, deployments, AllNamespaces()); err != nil {
		t.Fatal(err)
	}
	<-n.cache("a").stopped
	expectList(t, n.Watcher, deployments, "a1", "b1")

	n.hold = true // the namespaces' informers do not list
	narrowed, err := n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{key: InNamespaces("b")})
	if err != nil || len(narrowed) != 0 {
		t.Fatalf("narrowed %+v, %v; want nothing while b's informer has not listed", narrowed, err)
	}
	if !n.wds.running("Deployment") || !n.Watching(deployments, "a") {
		t.Fatal("the cluster-wide informer stopped before b's informer listed")
	}
	expectList(t, n.Watcher, deployments, "a1", "b1")
	n.cache("b").release()
	narrowed, err = n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{key: InNamespaces("b")})
	if err != nil || len(narrowed) != 1 {
		t.Fatalf("narrowed %+v, %v; want deployments kept in b", narrowed, err)
	}
	expectScope(t, n.Watcher, deployments, "b")
	expectList(t, n.Watcher, deployments, "b1")
}

// Cluster-scoped resources, and resources wanted in more than MaxNamespaces namespaces, are
// watched cluster-wide; so is everything without namespace caches.
func TestClusterWideWhenNamespacesCannotNarrow(t *testing.T) {
	n := newNSWatcher(nil)
	ctx := context.Background()
	if err := n.Ensure(ctx, clusterRole, InNamespaces("a")); err != nil {
		t.Fatal(err)
	}
	expectScope(t, n.Watcher, clusterRole, "*")
	var many []string
	for i := range MaxNamespaces + 1 {
		many = append(many, fmt.Sprintf("ns%02d", i))
	}
	if err := n.Ensure(ctx, deployments, InNamespaces(many...)); err != nil {
		t.Fatal(err)
	}
	expectScope(t, n.Watcher, deployments, "*")

	plain := NewWatcher(newFakeCache(""), syncTimeoutForTests, n.handler, n.log)
	if err := plain.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Fatal(err)
	}
	expectScope(t, plain, deployments, "*")
}

// A resource being narrowed from cluster-wide keeps the namespaces' informers it waits for even
// when another caller, covered by the cluster-wide informer, ensures it meanwhile.
func TestNarrowingSurvivesConcurrentEnsure(t *testing.T) {
	n := newNSWatcher(map[string][]string{"a": {"a1"}, "b": {"b1"}})
	n.syncTimeout = time.Minute // the wait ends when b's informer is let list
	ctx, key := context.Background(), deployments.GVR.String()
	if err := n.Ensure(ctx, deployments, AllNamespaces()); err != nil {
		t.Fatal(err)
	}
	n.hold, n.made = true, make(chan string, 1)
	done := make(chan []Narrowed)
	go func() {
		narrowed, err := n.StopExcept(ctx, []ResourceInfo{deployments}, map[string]Scope{key: InNamespaces("b")})
		if err != nil {
			t.Error(err)
		}
		done <- narrowed
	}()
	<-n.made // b's informer started, not listed
	if err := n.Ensure(ctx, deployments, InNamespaces("a")); err != nil {
		t.Fatal(err)
	}
	n.cache("b").release()
	if narrowed := <-done; len(narrowed) != 1 || narrowed[0].Kept.String() != "b" {
		t.Fatalf("narrowed %+v, want deployments kept in b", narrowed)
	}
	expectList(t, n.Watcher, deployments, "b1")
}

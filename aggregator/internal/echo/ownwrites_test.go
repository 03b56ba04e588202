package echo

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// echo reports whether rv is the resourceVersion of one of statusfold's last writes of key.
func (w *OwnWrites) echo(key, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.m[key]
	return o != nil && o.isOwn(rv)
}

// record is a write of key that gave it rv, begun and ended at once.
func (w *OwnWrites) record(key, rv string) {
	w.Begin(key, "status")
	w.End(key, rv)
}

func TestOwnWritesRecognizeOnlyTheirOwnEcho(t *testing.T) {
	var w OwnWrites
	k := CombinedStatusWriteKey("ns", "cs")
	if w.echo(k, "5") {
		t.Error("echo before any write")
	}
	w.record(k, "5")
	if !w.echo(k, "5") {
		t.Error("own write not recognized")
	}
	if w.echo(k, "6") {
		t.Error("another writer's change taken for an echo")
	}
	w.record(k, "") // a write whose result carried no resourceVersion changes nothing
	if !w.echo(k, "5") {
		t.Error("empty resourceVersion recorded")
	}
	w.Forget(k)
	if w.echo(k, "5") {
		t.Error("echo after forget")
	}
}

// TestOwnWritesHoldEventsDuringAWrite: the watch may deliver a write's echo before the write's
// answer; an event during a write is decided when the write ends, and nothing held is lost.
func TestOwnWritesHoldEventsDuringAWrite(t *testing.T) {
	echoes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "echoes"}, []string{"what"})
	w := New(echoes)
	dropped := func(what string, want float64) {
		t.Helper()
		if got := testutil.ToFloat64(echoes.WithLabelValues(what)); got != want {
			t.Errorf("echoes of %s writes counted: %v, want %v", what, got, want)
		}
	}
	k := CombinedStatusWriteKey("ns", "cs")
	calls := 0
	notEcho := func() { calls++ }
	expect := func(what string, want int) {
		t.Helper()
		if calls != want {
			t.Errorf("%s: notEcho called %d times, want %d", what, calls, want)
		}
		calls = 0
	}

	w.Begin(k, "combinedstatus")
	if w.Seen(k, "7", notEcho) {
		t.Error("an event during a write taken for an echo before the write ended")
	}
	expect("the echo before the write's answer, held", 0)
	w.End(k, "7")
	expect("the echo before the write's answer, after it", 0)
	dropped("combinedstatus", 1)

	w.Begin(k, "combinedstatus")
	w.Seen(k, "8", notEcho) // another writer's change during the write
	expect("another change during a write, held", 0)
	w.End(k, "9")
	expect("another change during a write, after it", 1)

	if !w.Seen(k, "7", notEcho) {
		t.Error("the previous write's echo, after the next write's answer, not recognized")
	}
	if w.Seen(k, "12", notEcho) {
		t.Error("another change taken for an echo")
	}
	expect("echoes and a change with no write in flight", 1)
	dropped("combinedstatus", 2) // the held echo, and the late one; never the other writers' changes

	w.Begin(k, "combinedstatus")
	w.Seen(k, "10", notEcho)
	w.End(k, "") // the write failed
	expect("an event during a failed write", 1)
	if !w.echo(k, "9") || !w.echo(k, "7") || w.echo(k, "") {
		t.Error("a failed write changed what is remembered")
	}

	w.Begin(k, "combinedstatus")
	w.Seen(k, "11", notEcho)
	w.Forget(k) // the object went
	expect("an event held when its object is forgotten", 1)
	w.End(k, "13")
	expect("the end of a write whose object was forgotten", 0)

	d := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "a"}.String()
	w.Begin(d, "status")
	w.Seen(d, "14", notEcho)
	w.ForgetResource(schema.GroupResource{Group: "apps", Resource: "deployments"})
	expect("an event held when its resource is forgotten", 1)
	dropped("combinedstatus", 2)
	dropped("status", 0)
}

func TestOwnWritesForgetResource(t *testing.T) {
	var w OwnWrites
	w.record(rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "a"}.String(), "1")
	w.record(rules.ObjectKey{Group: "apps", Resource: "deployments", Name: "b"}.String(), "2")
	w.record(rules.ObjectKey{Group: "apps", Resource: "deploymentsx", Namespace: "ns", Name: "a"}.String(), "3")
	w.record(rules.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: "a"}.String(), "4")
	w.record(CombinedStatusWriteKey("ns", "a"), "5")
	w.ForgetResource(schema.GroupResource{Group: "apps", Resource: "deployments"})
	if n := w.len(); n != 3 {
		t.Errorf("%d writes remembered after forgetting apps/deployments, want 3", n)
	}
	if !w.echo(rules.ObjectKey{Group: "apps", Resource: "deploymentsx", Namespace: "ns", Name: "a"}.String(), "3") {
		t.Errorf("another resource's write was forgotten")
	}
	w.ForgetResource(schema.GroupResource{Resource: "configmaps"})
	if n := w.len(); n != 2 {
		t.Errorf("%d writes remembered after forgetting configmaps, want 2", n)
	}
}

package fanout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// TestWorkloadUpdatesThatEndAHold: an update that may change what a Binding's consumer delivers
// never leaves the version a Binding lists held (echo.Holds), whatever else the event carries;
// a status-only update of a listed object starts the hold.
func TestWorkloadUpdatesThatEndAHold(t *testing.T) {
	app := map[string]string{"app": "v"}
	d := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "d"}
	c := rules.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: "c"}
	newX := func(t *testing.T) *harness {
		x := newHarness(t, append(seeded(), policySelecting("bp", "app"))...)
		x.h.holds = echo.NewHolds(time.Minute)
		return x
	}
	t.Run("a status write: held", func(t *testing.T) {
		x := newX(t)
		x.h.onWorkload(deployRes)(workload(deployRes, "d", "10", 1, app), workload(deployRes, "d", "11", 1, app))
		if got := x.h.holds.Version(d, "11", "10"); got != "10" {
			t.Errorf("Binding records %q, want the held 10", got)
		}
	})
	t.Run("statusfold's echo after another writer's spec change (two writes in one event)", func(t *testing.T) {
		x := newX(t)
		x.ownWrite(keyD, "12")
		x.h.onWorkload(deployRes)(workload(deployRes, "d", "10", 1, app), workload(deployRes, "d", "12", 2, app))
		if got := x.h.holds.Version(d, "12", "10"); got != "12" {
			t.Errorf("generation 1→2 hidden: Binding keeps %q, want 12", got)
		}
		if len(x.policies.items) != 1 || x.policies.items[0] != "b1 after 5s" {
			t.Errorf("policies queued %q, want the Binding's refresh after the short delay", x.policies.items)
		}
	})
	t.Run("deleted and created again between two events (a new UID)", func(t *testing.T) {
		x := newX(t)
		o, n := workload(deployRes, "d", "10", 1, app), workload(deployRes, "d", "15", 1, app)
		o.SetUID(types.UID("old"))
		n.SetUID(types.UID("new"))
		x.h.holds.Quiet(d, "10")
		x.h.onWorkload(deployRes)(o, n)
		if got := x.h.holds.Version(d, "15", "10"); got != "15" {
			t.Errorf("the new object hidden: Binding keeps the old object's %q, want 15", got)
		}
	})
	t.Run("a kind without a status subresource: a return's echo is not held", func(t *testing.T) {
		x := newX(t)
		x.h.holds.Quiet(c, "20")
		x.ownWrites.Begin(keyC, "status")
		x.h.onWorkload(cmRes)(workload(cmRes, "c", "20", 0, app), workload(cmRes, "c", "21", 0, app))
		x.ownWrites.End(keyC, "21")
		if got := x.h.holds.Version(c, "21", "20"); got != "21" {
			t.Errorf("Binding keeps %q, want the current 21: such a kind's status is in what is delivered", got)
		}
	})
	t.Run("deleted: the hold goes", func(t *testing.T) {
		x := newX(t)
		x.h.holds.Quiet(d, "10")
		x.h.onWorkload(deployRes)(workload(deployRes, "d", "11", 1, app), nil)
		if got := x.h.holds.Version(d, "99", "10"); got != "99" {
			t.Errorf("the deleted object's hold is kept (Version %q)", got)
		}
	})
}

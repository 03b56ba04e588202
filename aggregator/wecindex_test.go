package aggregator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestWECIndex: one WorkStatus per WEC and the rare several (the newest counts, as
// NewestWorkStatus says), replaced by name, removed back to one and to none; take reports each
// changed WEC once, also after a burst of more changes than it keeps its map for; a WorkStatus
// whose source changes moves to the other object's entry.
func TestWECIndex(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	ws := func(wec, name, obj string, created time.Duration) *controlv1alpha1.WorkStatus {
		w := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: name,
			CreationTimestamp: metav1.NewTime(t0.Add(created))}}
		w.Spec.SourceRef = controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "ns", Name: obj}
		return w
	}
	k := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	other := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "db"}
	x := newWECIndex()
	takeDirty := func() []string {
		d, _, _ := x.take(k)
		slices.Sort(d)
		return d
	}
	get := func(wec string, want *controlv1alpha1.WorkStatus, when string) {
		t.Helper()
		if got := x.get(k, wec); got != want {
			t.Fatalf("%s: get(%s) = %v, want %v", when, wec, got, want)
		}
	}

	a := ws("wec1", "a", "web", 0)
	x.update(nil, a)
	x.update(nil, ws("wec2", "a", "web", 0))
	get("wec1", a, "one")
	if d := takeDirty(); !slices.Equal(d, []string{"wec1", "wec2"}) {
		t.Fatalf("dirty after two adds = %v", d)
	}
	if d := takeDirty(); len(d) != 0 {
		t.Fatalf("dirty after a take with no change = %v", d)
	}
	a2 := ws("wec1", "a", "web", 0)
	x.update(a, a2)
	get("wec1", a2, "replaced by name")

	b := ws("wec1", "b", "web", time.Second) // a second one in the mailbox, newer
	x.update(nil, b)
	get("wec1", b, "two in a mailbox")
	b2 := ws("wec1", "b", "web", time.Second)
	x.update(b, b2)
	get("wec1", b2, "two in a mailbox, one replaced")
	c := ws("wec1", "c", "web", 2*time.Second)
	x.update(nil, c)
	get("wec1", c, "three in a mailbox")
	x.update(c, nil)
	get("wec1", b2, "three, newest removed")
	x.update(b2, nil)
	get("wec1", a2, "back to one")
	if d := takeDirty(); !slices.Equal(d, []string{"wec1"}) {
		t.Fatalf("dirty = %v, want [wec1]", d)
	}

	// A burst of changes beyond smallDirty, then the next take sees only what changed since.
	for i := range 2 * smallDirty {
		x.update(nil, ws(fmt.Sprintf("w%03d", i), "a", "web", 0))
	}
	if d := takeDirty(); len(d) != 2*smallDirty {
		t.Fatalf("%d dirty after the burst, want %d", len(d), 2*smallDirty)
	}
	x.update(nil, ws("w000", "a", "web", 0))
	if d := takeDirty(); !slices.Equal(d, []string{"w000"}) {
		t.Fatalf("dirty after the burst's take and one change = %v", d)
	}

	// The source changes: the WorkStatus leaves web's entry for db's.
	moved := ws("wec2", "a", "db", 0)
	x.update(x.get(k, "wec2"), moved)
	get("wec2", nil, "moved away")
	if got := x.get(other, "wec2"); got != moved {
		t.Fatalf("get(db, wec2) = %v, want the moved WorkStatus", got)
	}
	if d := takeDirty(); !slices.Equal(d, []string{"wec2"}) {
		t.Fatalf("dirty after the move = %v, want [wec2]", d)
	}

	// Removing every WorkStatus of an object drops its entry at the next take.
	for i := range 2 * smallDirty {
		x.update(x.get(k, fmt.Sprintf("w%03d", i)), nil)
	}
	x.update(a2, nil)
	takeDirty()
	if _, ok := x.m[k]; ok {
		t.Fatal("an object without WorkStatuses kept its entry after a take")
	}
}

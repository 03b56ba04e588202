package itscache

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
	h := &wecIndexTest{t: t, x: NewWECIndex(),
		k:     rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"},
		other: rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "db"}}
	a2 := h.mailbox()
	h.burst()
	h.move()

	// Removing every WorkStatus of an object drops its entry at the next take.
	for i := range 2 * smallDirty {
		h.x.Update(h.x.Get(h.k, fmt.Sprintf("w%03d", i)), nil)
	}
	h.x.Update(a2, nil)
	h.takeDirty()
	if _, ok := h.x.m[h.k]; ok {
		t.Fatal("an object without WorkStatuses kept its entry after a take")
	}
}

// wecIndexTest drives one WECIndex through TestWECIndex's steps, for the object k.
type wecIndexTest struct {
	t        *testing.T
	x        *WECIndex
	k, other rules.ObjectKey
}

var wecIndexT0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// ws is a WorkStatus of wec named name that reports obj, created at created after wecIndexT0.
func (h *wecIndexTest) ws(wec, name, obj string, created time.Duration) *controlv1alpha1.WorkStatus {
	w := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: name,
		CreationTimestamp: metav1.NewTime(wecIndexT0.Add(created))}}
	w.Spec.SourceRef = controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "ns", Name: obj}
	return w
}

func (h *wecIndexTest) takeDirty() []string {
	d, _, _ := h.x.Take(h.k)
	slices.Sort(d)
	return d
}

func (h *wecIndexTest) get(wec string, want *controlv1alpha1.WorkStatus, when string) {
	h.t.Helper()
	if got := h.x.Get(h.k, wec); got != want {
		h.t.Fatalf("%s: get(%s) = %v, want %v", when, wec, got, want)
	}
}

// mailbox adds, replaces and removes WorkStatuses of one and several in a mailbox; it returns
// the one left in wec1.
func (h *wecIndexTest) mailbox() *controlv1alpha1.WorkStatus {
	t, x, ws, get := h.t, h.x, h.ws, h.get
	a := ws("wec1", "a", "web", 0)
	x.Update(nil, a)
	x.Update(nil, ws("wec2", "a", "web", 0))
	get("wec1", a, "one")
	if d := h.takeDirty(); !slices.Equal(d, []string{"wec1", "wec2"}) {
		t.Fatalf("dirty after two adds = %v", d)
	}
	if d := h.takeDirty(); len(d) != 0 {
		t.Fatalf("dirty after a take with no change = %v", d)
	}
	a2 := ws("wec1", "a", "web", 0)
	x.Update(a, a2)
	get("wec1", a2, "replaced by name")

	b := ws("wec1", "b", "web", time.Second) // a second one in the mailbox, newer
	x.Update(nil, b)
	get("wec1", b, "two in a mailbox")
	b2 := ws("wec1", "b", "web", time.Second)
	x.Update(b, b2)
	get("wec1", b2, "two in a mailbox, one replaced")
	c := ws("wec1", "c", "web", 2*time.Second)
	x.Update(nil, c)
	get("wec1", c, "three in a mailbox")
	x.Update(c, nil)
	get("wec1", b2, "three, newest removed")
	x.Update(b2, nil)
	get("wec1", a2, "back to one")
	if d := h.takeDirty(); !slices.Equal(d, []string{"wec1"}) {
		t.Fatalf("dirty = %v, want [wec1]", d)
	}
	return a2
}

// burst: a burst of changes beyond smallDirty, then the next take sees only what changed since.
func (h *wecIndexTest) burst() {
	t, x := h.t, h.x
	for i := range 2 * smallDirty {
		x.Update(nil, h.ws(fmt.Sprintf("w%03d", i), "a", "web", 0))
	}
	if d := h.takeDirty(); len(d) != 2*smallDirty {
		t.Fatalf("%d dirty after the burst, want %d", len(d), 2*smallDirty)
	}
	x.Update(nil, h.ws("w000", "a", "web", 0))
	if d := h.takeDirty(); !slices.Equal(d, []string{"w000"}) {
		t.Fatalf("dirty after the burst's take and one change = %v", d)
	}
}

// move: the source changes: the WorkStatus leaves web's entry for db's.
func (h *wecIndexTest) move() {
	t, x := h.t, h.x
	moved := h.ws("wec2", "a", "db", 0)
	x.Update(x.Get(h.k, "wec2"), moved)
	h.get("wec2", nil, "moved away")
	if got := x.Get(h.other, "wec2"); got != moved {
		t.Fatalf("get(db, wec2) = %v, want the moved WorkStatus", got)
	}
	if d := h.takeDirty(); !slices.Equal(d, []string{"wec2"}) {
		t.Fatalf("dirty after the move = %v, want [wec2]", d)
	}
}

package echo

import (
	"strconv"
	"testing"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// clock is a settable time for Holds.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newTestHolds(c *clock, d time.Duration) *Holds {
	h := NewHolds(d)
	h.now = c.now
	return h
}

func (h *Holds) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}

func TestHoldsKeepTheListedVersionUntilTheDelayEnds(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := newTestHolds(c, time.Minute)
	k := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	other := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "db"}

	if got := h.Version(k, "5", "4"); got != "5" {
		t.Errorf("no hold: Version %q, want the current 5", got)
	}
	h.Quiet(k, "4") // 4 → 5: a status write
	c.advance(20 * time.Second)
	h.Quiet(k, "5") // 5 → 6: another; the hold stays at 4, from the first
	for _, tc := range []struct {
		key             rules.ObjectKey
		current, listed string
		want, why       string
	}{
		{k, "6", "4", "4", "a Binding listing the held version keeps it"},
		{k, "6", "", "6", "a Binding that does not list the object lists the current version"},
		{k, "6", "6", "6", "a Binding listing the current version keeps it"},
		{other, "9", "4", "9", "another object is not held"},
		{k, "6", "4", "4", "again"},
	} {
		if got := h.Version(tc.key, tc.current, tc.listed); got != tc.want {
			t.Errorf("%s: Version(%s, current %q, listed %q) = %q, want %q", tc.why, tc.key, tc.current, tc.listed, got, tc.want)
		}
	}
	c.advance(40*time.Second - time.Nanosecond)
	if got := h.Version(k, "6", "4"); got != "4" {
		t.Errorf("just before the delay ends: %q, want the held 4", got)
	}
	c.advance(time.Nanosecond)
	if got := h.Version(k, "6", "4"); got != "6" {
		t.Errorf("when the delay ends (the refresh the first update queued): %q, want the current 6", got)
	}
	if h.held() != 0 {
		t.Errorf("an expired hold is kept: %d held", h.held())
	}
	// A quiet update after the expiry starts a new hold.
	h.Quiet(k, "6")
	if got := h.Version(k, "7", "6"); got != "6" {
		t.Errorf("a new hold: %q, want 6", got)
	}
}

func TestHoldsEndWithAnUpdateThatMatters(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := newTestHolds(c, time.Minute)
	k := rules.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: "cm"}
	h.Quiet(k, "4")
	h.Release(k) // e.g. a label another writer changed, or the object deleted
	if got := h.Version(k, "6", "4"); got != "6" {
		t.Errorf("after a release: %q, want the current 6", got)
	}
	if h.held() != 0 {
		t.Errorf("%d held after a release", h.held())
	}
	h.Quiet(k, "") // no version: nothing to hold
	if h.held() != 0 {
		t.Errorf("an empty version held")
	}
	var none *Holds // no holds: every reconcile lists the current versions
	none.Quiet(k, "4")
	none.Release(k)
	if got := none.Version(k, "6", "4"); got != "6" {
		t.Errorf("nil Holds: %q, want 6", got)
	}
}

// TestHoldsMoveToTheVersionWritten: a Binding that lists another version than the one held (it
// was written between the hold's start and its event) is brought to the current version, and the
// hold moves there, keeping its end: the quiet updates that follow do not rewrite it again.
func TestHoldsMoveToTheVersionWritten(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := newTestHolds(c, time.Minute)
	k := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	h.Quiet(k, "5") // 5 → 6; the Binding was written at 3 → 5 just before (its refresh ran late)
	if got := h.Version(k, "6", "3"); got != "6" {
		t.Errorf("a Binding listing another version: %q, want the current 6", got)
	}
	h.Quiet(k, "6") // 6 → 7: within the hold
	c.advance(59 * time.Second)
	if got := h.Version(k, "7", "6"); got != "6" {
		t.Errorf("after the move: %q, want the 6 now listed", got)
	}
	c.advance(time.Second)
	if got := h.Version(k, "7", "6"); got != "7" {
		t.Errorf("at the first hold's end: %q, want the current 7", got)
	}
}

// TestHoldsForgetExpired: holds that no Binding reconcile looks at again are dropped by a later
// Quiet once they have expired.
func TestHoldsForgetExpired(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := newTestHolds(c, time.Minute)
	for i := range 100 {
		h.Quiet(rules.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: strconv.Itoa(i)}, "1")
	}
	c.advance(2 * time.Minute)
	h.Quiet(rules.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: "new"}, "1")
	if n := h.held(); n != 1 {
		t.Errorf("%d held after the others expired, want 1", n)
	}
}

package echo

import (
	"sync"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// Holds remembers, per workload object, the resourceVersion a Binding keeps listing while the
// object's later updates change nothing a Binding's consumer delivers to a WEC: a status write
// (statusfold's own status return, or KubeStellar's) or the status-return labels. Such updates
// are recorded in the Bindings that list the object once the delay (the own-version refresh
// delay) has passed since the first of them, by the refresh they queue — not earlier by whatever
// else reconciles the policy in the meantime (a cluster's labels, the policy's own status): every
// Binding write costs the apiserver and KubeStellar's transport in proportion to the Binding's
// size, so these updates coalesce into one write per delay. An update that may change what is
// delivered (or selected) ends the hold: the next reconcile records the object's version at once.
type Holds struct {
	mu    sync.Mutex
	delay time.Duration
	m     map[rules.ObjectKey]hold
	now   func() time.Time
	// swept is when expired holds were last dropped (Quiet sweeps once per delay): the objects
	// whose holds no Binding reconcile looks at again (no longer listed, their informer stopped)
	// are forgotten within two delays.
	swept time.Time
}

// hold is the version held for one object, and when the first update it hides was seen.
type hold struct {
	rv    string
	since time.Time
}

// NewHolds returns the Holds of the own-version refresh delay.
func NewHolds(delay time.Duration) *Holds {
	return &Holds{delay: delay, m: map[rules.ObjectKey]hold{}, now: time.Now}
}

// Quiet records an update of the object key from resourceVersion from that changed nothing
// delivered: the first such update since the last one that did (or since the hold expired)
// holds from. It reports whether it started a hold (false: one was on already, or from is empty).
func (h *Holds) Quiet(key rules.ObjectKey, from string) bool {
	if h == nil || from == "" {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if now.Sub(h.swept) >= h.delay {
		for k, cur := range h.m {
			if now.Sub(cur.since) >= h.delay {
				delete(h.m, k)
			}
		}
		h.swept = now
	}
	if cur, ok := h.m[key]; ok && now.Sub(cur.since) < h.delay {
		return false
	}
	h.m[key] = hold{rv: from, since: now}
	return true
}

// Release ends the hold of the object key: an update that may change what is delivered, or the
// object's creation or deletion.
func (h *Holds) Release(key rules.ObjectKey) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// Version is the resourceVersion a Binding that lists the object key at listed ("": does not list
// it) records for it, the object being at current: listed while the hold of listed lasts, else
// current. A hold that has expired is forgotten. A hold of another version than listed (the
// Binding was written between the hold's start and its event) moves to current, which the
// Binding is about to list: the updates that follow are held from there, until the same end.
func (h *Holds) Version(key rules.ObjectKey, current, listed string) string {
	if h == nil || listed == "" || listed == current {
		return current
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, ok := h.m[key]
	switch {
	case !ok:
		return current
	case h.now().Sub(cur.since) >= h.delay:
		delete(h.m, key)
		return current
	case cur.rv != listed:
		h.m[key] = hold{rv: current, since: cur.since}
		return current
	}
	return listed
}

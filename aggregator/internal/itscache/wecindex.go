package itscache

import (
	"slices"
	"sync"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// WECIndex keeps, per workload object, the cached WorkStatuses that report it, by WEC, and which
// WECs changed since the object's last evaluation. It is fed by the WorkStatus event handler with
// the informer's own objects (shared with the cache, only read), so an evaluation finds one
// object's WorkStatuses without listing and copying them, and re-reads only the WECs that changed.
type WECIndex struct {
	mu    sync.Mutex
	m     map[rules.ObjectKey]*objectWECs
	takes uint64 // counts takes over all objects: the epochs
}

// objectWECs is one object's entry.
type objectWECs struct {
	// one holds the WorkStatus of each WEC (mailbox namespace) that holds one for the object;
	// more the WECs that hold several (rare: a WorkStatus renamed, say), which then have no entry
	// in one. (A map of lists for the usual single one would cost a list per WorkStatus.)
	one   map[string]*controlv1alpha1.WorkStatus
	more  map[string][]*controlv1alpha1.WorkStatus
	dirty map[string]struct{} // WECs changed since the last take (nil: none yet)
	epoch uint64              // of the last take; 0 for a new entry
}

func NewWECIndex() *WECIndex { return &WECIndex{m: map[rules.ObjectKey]*objectWECs{}} }

func (x *WECIndex) entry(k rules.ObjectKey) *objectWECs {
	e := x.m[k]
	if e == nil {
		e = &objectWECs{one: map[string]*controlv1alpha1.WorkStatus{}}
		x.m[k] = e
	}
	return e
}

// markDirty records that wec changed.
func (e *objectWECs) markDirty(wec string) {
	if e.dirty == nil {
		e.dirty = map[string]struct{}{}
	}
	e.dirty[wec] = struct{}{}
}

// remove drops a WorkStatus (matched by namespace and name) and marks its WEC changed.
func (x *WECIndex) remove(ws *controlv1alpha1.WorkStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(rules.WorkStatusObject(ws))
	wec := ws.Namespace
	if list, ok := e.more[wec]; ok {
		if i := indexNamed(list, ws.Name); i >= 0 {
			list = slices.Concat(list[:i], list[i+1:]) // a new slice: readers may hold the old one
		}
		if len(list) == 1 {
			delete(e.more, wec)
			e.one[wec] = list[0]
		} else {
			e.more[wec] = list
		}
	} else if w := e.one[wec]; w != nil && w.Name == ws.Name {
		delete(e.one, wec)
	}
	e.markDirty(wec)
}

// upsert adds or replaces a WorkStatus and marks its WEC changed.
func (x *WECIndex) upsert(ws *controlv1alpha1.WorkStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(rules.WorkStatusObject(ws))
	wec := ws.Namespace
	if list, ok := e.more[wec]; ok {
		// A new slice: readers may hold the old one.
		if i := indexNamed(list, ws.Name); i >= 0 {
			list = slices.Clone(list)
			list[i] = ws
		} else {
			list = append(list[:len(list):len(list)], ws)
		}
		e.more[wec] = list
	} else if w := e.one[wec]; w == nil || w.Name == ws.Name {
		e.one[wec] = ws
	} else {
		delete(e.one, wec)
		if e.more == nil {
			e.more = map[string][]*controlv1alpha1.WorkStatus{}
		}
		e.more[wec] = []*controlv1alpha1.WorkStatus{w, ws}
	}
	e.markDirty(wec)
}

// Update applies an informer event: o is the old object (nil when added), n the new (nil when
// deleted). A WorkStatus whose source changed leaves its old object's entry.
func (x *WECIndex) Update(o, n *controlv1alpha1.WorkStatus) {
	if o != nil && (n == nil || rules.WorkStatusObject(o) != rules.WorkStatusObject(n)) {
		x.remove(o)
	}
	if n != nil {
		x.upsert(n)
	}
}

// indexNamed returns the index of the WorkStatus named name in list, or -1.
func indexNamed(list []*controlv1alpha1.WorkStatus, name string) int {
	return slices.IndexFunc(list, func(w *controlv1alpha1.WorkStatus) bool { return w.Name == name })
}

// smallDirty is the most changed WECs of an object whose map take clears for reuse.
const smallDirty = 32

// Take starts an evaluation of k: it returns the WECs changed since the previous take, the epoch
// of that previous take (0 if none is known) and the epoch of this one. Epochs are unique over all
// objects. An evaluation may feed only the changed WECs into a consumer (a Table, a returned-status
// State) that the evaluation of epoch prev brought fully up to date; any other consumer must be
// fed every WEC.
func (x *WECIndex) Take(k rules.ObjectKey) (dirty []string, prev, epoch uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(k)
	dirty = make([]string, 0, len(e.dirty))
	for w := range e.dirty {
		dirty = append(dirty, w)
	}
	if len(e.dirty) > smallDirty {
		e.dirty = nil // a map keeps its size when cleared: after a burst, start small again
	} else {
		clear(e.dirty)
	}
	x.takes++
	prev, e.epoch = e.epoch, x.takes
	if len(e.one) == 0 && len(e.more) == 0 {
		delete(x.m, k) // nothing reports the object; a new entry starts at epoch 0
	}
	return dirty, prev, e.epoch
}

// Get returns the WorkStatus that reports k from wec — the newest by creation when a mailbox
// holds two — or nil.
func (x *WECIndex) Get(k rules.ObjectKey, wec string) *controlv1alpha1.WorkStatus {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.m[k]
	if e == nil {
		return nil
	}
	if list, ok := e.more[wec]; ok {
		return rules.NewestWorkStatus(list)
	}
	return e.one[wec]
}

// len is the number of objects with an entry.
func (x *WECIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.m)
}

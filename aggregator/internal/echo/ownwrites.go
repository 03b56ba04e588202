package echo

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// OwnWrites remembers, per object statusfold writes, the resourceVersions its last writes gave
// the object. A watch event carrying one of them is the echo of statusfold's own write: it changes
// no input, so it needs no evaluation. Any other writer's change has another resourceVersion and
// is evaluated as usual.
//
// The watch may deliver a write's echo before the write's answer gives its resourceVersion, so a
// writer marks its write with Begin and End: an event that arrives in between, and is not the
// echo of an earlier write, is held and decided when the write ends — dropped if it carries the
// write's resourceVersion, else handed on as any other change (held events are never lost:
// a failed write, Forget and ForgetResource hand them all on).
//
// Each echo dropped is counted by what was written (New's counter: statusfold_own_write_echoes_total).
type OwnWrites struct {
	mu sync.Mutex
	m  map[string]*ownWrite
	// echoes counts the echoes dropped, by what was written (nil: not counted).
	echoes *prometheus.CounterVec
}

// New returns an OwnWrites that counts the echoes it drops in echoes (label: what was written, as
// Begin names it); nil counts nothing.
func New(echoes *prometheus.CounterVec) *OwnWrites { return &OwnWrites{echoes: echoes} }

// ownWrite is what OwnWrites knows of one object.
type ownWrite struct {
	rvs      [ownWriteRVs]string // the resourceVersions of the last writes, newest first
	inFlight bool
	held     []heldEvent // the events that arrived during the write in flight
	what     string      // what the last write wrote, as statusfold_writes_total names it
}

// heldEvent is an event held during a write: its resourceVersion, and what to do if it is not
// the write's echo.
type heldEvent struct {
	rv      string
	notEcho func()
}

// ownWriteRVs is how many of its writes' resourceVersions are remembered per object: an
// evaluation writes an object at most twice (a returned status's labels, then its status), and the
// first write's echo may arrive after the second write's answer.
const ownWriteRVs = 2

func (o *ownWrite) isOwn(rv string) bool {
	return rv != "" && slices.Contains(o.rvs[:], rv)
}

func (w *OwnWrites) entry(key string) *ownWrite {
	if w.m == nil {
		w.m = map[string]*ownWrite{}
	}
	o := w.m[key]
	if o == nil {
		o = &ownWrite{}
		w.m[key] = o
	}
	return o
}

// Begin marks a write of key as started; what names what it writes, as statusfold_writes_total
// does ("combinedstatus", "status", "binding"). Each Begin must be followed by End (deferred: a
// write that panics must not leave its events held).
func (w *OwnWrites) Begin(key, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.entry(key)
	o.inFlight, o.what = true, what
}

// dropped counts n echoes of the writes of o as dropped. Called with w.mu held.
func (w *OwnWrites) dropped(o *ownWrite, n int) {
	if w.echoes != nil && n > 0 {
		w.echoes.WithLabelValues(o.what).Add(float64(n))
	}
}

// End marks the write of key as done, with the resourceVersion it gave the object ("" when it
// failed, or its answer carried none), and hands on the events held meanwhile that were not its
// echo.
func (w *OwnWrites) End(key, rv string) {
	w.mu.Lock()
	o := w.entry(key)
	if rv != "" {
		copy(o.rvs[1:], o.rvs[:])
		o.rvs[0] = rv
	}
	var notEcho []func()
	for _, e := range o.held {
		if !o.isOwn(e.rv) {
			notEcho = append(notEcho, e.notEcho)
		}
	}
	w.dropped(o, len(o.held)-len(notEcho))
	o.inFlight, o.held = false, nil
	w.mu.Unlock()
	for _, f := range notEcho {
		f()
	}
}

// Seen decides an event of key with resourceVersion rv: the echo of one of statusfold's last
// writes is dropped (Seen reports true); during a write the event is held until the write ends
// (End); anything else calls notEcho now.
func (w *OwnWrites) Seen(key, rv string, notEcho func()) bool {
	w.mu.Lock()
	o := w.m[key]
	switch {
	case o != nil && o.isOwn(rv):
		w.dropped(o, 1)
		w.mu.Unlock()
		return true
	case o != nil && o.inFlight:
		o.held = append(o.held, heldEvent{rv: rv, notEcho: notEcho})
		w.mu.Unlock()
	default:
		w.mu.Unlock()
		notEcho()
	}
	return false
}

// Forget forgets key (its object is gone) and hands on the events held for it.
func (w *OwnWrites) Forget(key string) {
	w.mu.Lock()
	var held []heldEvent
	if o := w.m[key]; o != nil {
		held = o.held
		delete(w.m, key)
	}
	w.mu.Unlock()
	handOn(held)
}

// ForgetResource forgets every object of a resource (its informer stopped: no delete event will
// come for them).
func (w *OwnWrites) ForgetResource(gr schema.GroupResource) { w.ForgetResourceOutside(gr, nil) }

// ForgetResourceOutside forgets the objects of a resource whose namespace kept does not report
// (nil: every object): the informers of the other namespaces stopped.
func (w *OwnWrites) ForgetResourceOutside(gr schema.GroupResource, kept func(namespace string) bool) {
	prefix := rules.ObjectKey{Group: gr.Group, Resource: gr.Resource}.String()
	prefix = strings.TrimSuffix(prefix, "/") // group/resource/
	w.mu.Lock()
	var held []heldEvent
	for k, o := range w.m {
		rest, ok := strings.CutPrefix(k, prefix)
		if ns, _, _ := strings.Cut(rest, "/"); ok && (kept == nil || !kept(ns)) {
			held = append(held, o.held...)
			delete(w.m, k)
		}
	}
	w.mu.Unlock()
	handOn(held)
}

// handOn treats events held for an object that is forgotten as changes by someone else.
func handOn(held []heldEvent) {
	for _, e := range held {
		e.notEcho()
	}
}

// len counts the objects whose writes are remembered.
func (w *OwnWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// BindingWriteKey is the OwnWrites key of a Binding.
func BindingWriteKey(name string) string { return "bindings/" + name }

// CombinedStatusWriteKey is the OwnWrites key of a CombinedStatus.
func CombinedStatusWriteKey(namespace, name string) string {
	return "combinedstatuses/" + namespace + "/" + name
}

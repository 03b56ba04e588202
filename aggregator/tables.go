package aggregator

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
)

// pairKey identifies a (workload object, BindingPolicy) pair.
type pairKey struct {
	Object ObjectKey
	Policy types.UID
}

// tableState is the collector engine's incremental Table of one pair, plus what it was last fed,
// so that a reconcile feeds only what changed: one changed WorkStatus re-evaluates one row.
type tableState struct {
	table      *collector.Table
	objectRV   string
	collectors []*collector.Collector
	dests      []string
	rowSig     map[string]string // WEC → signature of the input last upserted
}

// tableStore holds the Tables; each object key is reconciled by one worker at a time, so a
// tableState is used by one goroutine at a time, and only the map needs the lock.
type tableStore struct {
	mu sync.Mutex
	m  map[pairKey]*tableState
}

func (s *tableStore) init() { s.m = map[pairKey]*tableState{} }

func (s *tableStore) get(k pairKey, obj map[string]any, cols []*collector.Collector) *tableState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.m[k]
	if ts == nil {
		ts = &tableState{table: collector.NewTable(obj, cols), collectors: cols, rowSig: map[string]string{}}
		s.m[k] = ts
	}
	return ts
}

// dropExcept forgets the Tables of the object's pairs that are not in keep.
func (s *tableStore) dropExcept(obj ObjectKey, keep map[pairKey]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if k.Object == obj && !keep[k] {
			delete(s.m, k)
		}
	}
}

// feed brings the Table up to date with the object, collectors, destinations and WEC inputs.
func (ts *tableState) feed(objRV string, obj map[string]any, cols []*collector.Collector, dests []string, wec func(name string) collector.WEC, sigs map[string]string) {
	if ts.objectRV != objRV {
		ts.table.SetObject(obj)
		ts.objectRV = objRV
	}
	if !slices.Equal(ts.collectors, cols) {
		ts.table.SetCollectors(cols)
		ts.collectors = slices.Clone(cols)
	}
	if !slices.Equal(ts.dests, dests) {
		ts.table.SetDestinations(dests)
		for name := range ts.rowSig {
			if !slices.Contains(dests, name) {
				ts.table.RemoveWEC(name)
				delete(ts.rowSig, name)
			}
		}
		ts.dests = slices.Clone(dests)
	}
	for _, name := range dests {
		if sig, ok := ts.rowSig[name]; ok && sig == sigs[name] {
			continue
		}
		ts.table.UpsertWEC(wec(name))
		ts.rowSig[name] = sigs[name]
	}
}

// reportCache holds each WorkStatus's decoded, pruned report, keyed by UID and valid for one
// (resourceVersion, ContentClassifier resourceVersion). The decoded values are shared with the
// Tables and States they are fed to, and never mutated. Entries go when the WorkStatus leaves the
// cache (onWorkStatus).
type reportCache struct {
	mu sync.Mutex
	m  map[types.UID]reportEntry
}

type reportEntry struct {
	rv, prunerRV string
	r            report
}

func (c *reportCache) init() { c.m = map[types.UID]reportEntry{} }

// get returns ws's cached report; a nil ws (no WorkStatus) is never cached.
func (c *reportCache) get(ws *controlv1alpha1.WorkStatus, prunerRV string) (report, bool) {
	if ws == nil {
		return report{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[ws.UID]
	if !ok || e.rv != ws.ResourceVersion || e.prunerRV != prunerRV {
		return report{}, false
	}
	return e.r, true
}

func (c *reportCache) put(ws *controlv1alpha1.WorkStatus, prunerRV string, r report) {
	if ws == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[ws.UID] = reportEntry{rv: ws.ResourceVersion, prunerRV: prunerRV, r: r}
}

func (c *reportCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}

func (c *reportCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// returnMemo remembers the status last applied per object (and the object's UID, so a
// re-created object starts afresh), so an unchanged return is not written again.
type returnMemo struct {
	mu sync.Mutex
	m  map[ObjectKey]memoEntry
}

type memoEntry struct {
	uid    types.UID
	status string
}

func (r *returnMemo) init() { r.m = map[ObjectKey]memoEntry{} }

func (r *returnMemo) get(k ObjectKey, uid types.UID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[k]; ok && e.uid == uid {
		return e.status
	}
	return ""
}

func (r *returnMemo) set(k ObjectKey, uid types.UID, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = memoEntry{uid: uid, status: status}
}

func (r *returnMemo) forget(k ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// prunerCache holds one compiled classifier.Pruner per ContentClassifier resource version.
type prunerCache struct {
	mu sync.Mutex
	m  map[string]prunerEntry
}

type prunerEntry struct {
	rv     string
	pruner *classifier.Pruner
}

func (p *prunerCache) init() { p.m = map[string]prunerEntry{} }

func (p *prunerCache) get(cc *controlv1alpha1.ContentClassifier) *classifier.Pruner {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.m[cc.Name]; ok && e.rv == cc.ResourceVersion {
		return e.pruner
	}
	e := prunerEntry{rv: cc.ResourceVersion, pruner: classifier.NewPruner(cc)}
	p.m[cc.Name] = e
	return e.pruner
}

func (p *prunerCache) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, name)
}

// classifierName is the name of the ContentClassifier for a resource: resource.version.group,
// or resource.version for the core group (SPEC §6).
func classifierName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}

func labelsSig(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	var b []byte
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, l[k]...)
		b = append(b, 0)
	}
	return string(b)
}

// returnState is the aggregation engine's incremental State of one object, plus the signature of
// what each WEC's row was last fed.
type returnState struct {
	gk       schema.GroupKind
	state    *aggregation.State
	objectRV string
	sigs     map[string]string
}

// returnStates holds one returnState per object whose status is returned; like Tables, each is
// used by the one worker that holds the object's key.
type returnStates struct {
	mu sync.Mutex
	m  map[ObjectKey]*returnState
}

func (r *returnStates) init() { r.m = map[ObjectKey]*returnState{} }

func (r *returnStates) get(k ObjectKey, gk schema.GroupKind, e *aggregation.Engine) *returnState {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.m[k]
	if rs == nil || rs.gk != gk {
		rs = &returnState{gk: gk, state: e.NewState(gk), sigs: map[string]string{}}
		r.m[k] = rs
	}
	return rs
}

func (r *returnStates) forget(k ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

package aggregator

import (
	"iter"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/objview"
)

// pairKey identifies a (workload object, BindingPolicy) pair.
type pairKey struct {
	Object rules.ObjectKey
	Policy types.UID
}

// tableState is the collector engine's incremental Table of one pair, plus what it was last fed,
// so that a reconcile feeds only what changed: one changed WorkStatus re-evaluates one row.
type tableState struct {
	feedMark
	table      *collector.Table
	object     objectView
	collectors []*collector.Collector
	dests      []string // sorted; shared with destsCache, never modified
}

// feedMark records the evaluation that last brought a consumer (a Table, a returned-status State)
// fully up to date, and the inputs every WEC's row depends on at that time.
type feedMark struct {
	epoch      uint64 // wecIndex epoch; 0: never fed
	prunerRV   string
	clusterGen uint64
}

// fedBy reports whether the evaluation before in brought the consumer fully up to date with
// in's classifier and inventory labels: then feeding in.changed is enough.
func (m *feedMark) fedBy(in *objectInputs) bool {
	return m.epoch != 0 && m.epoch == in.prevEpoch && m.prunerRV == in.prunerRV && m.clusterGen == in.clusterGen
}

func (m *feedMark) fed(in *objectInputs) {
	m.epoch, m.prunerRV, m.clusterGen = in.epoch, in.prunerRV, in.clusterGen
}

// stale brings a consumer's WEC set (*have) to want (sorted) — of the WECs it was fed (fed), those
// that left it are dropped — and returns the WECs of want whose rows may be out of date: those
// changed since the previous evaluation when that one fed the consumer and the set is the same,
// else all of want.
func (m *feedMark) stale(in *objectInputs, have *[]string, want []string, fed iter.Seq[string], drop func(wec string)) []string {
	full := !m.fedBy(in)
	if !slices.Equal(*have, want) {
		var gone []string
		for name := range fed {
			if _, ok := slices.BinarySearch(want, name); !ok {
				gone = append(gone, name)
			}
		}
		for _, name := range gone {
			drop(name)
		}
		*have = want
		full = true
	}
	if full {
		return want
	}
	out := make([]string, 0, len(in.changed))
	for _, name := range in.changed {
		if _, ok := slices.BinarySearch(want, name); ok {
			out = append(out, name)
		}
	}
	return out
}

// objectView tracks the workload object as the engines see it (policy/objview).
type objectView struct {
	rv   string
	view map[string]any
}

// update returns the view of obj and whether it differs from the previous one: a write that
// changed only the object's status is no change.
func (o *objectView) update(obj *unstructured.Unstructured) (map[string]any, bool) {
	if o.view != nil && obj.GetResourceVersion() == o.rv {
		return o.view, false
	}
	v := objview.Of(obj.Object)
	o.rv = obj.GetResourceVersion()
	if o.view != nil && equality.Semantic.DeepEqual(v, o.view) {
		return o.view, false
	}
	o.view = v
	return v, true
}

// tableStore holds the Tables; each object key is reconciled by one worker at a time, so a
// tableState is used by one goroutine at a time, and only the map needs the lock.
type tableStore struct {
	mu sync.Mutex
	m  map[pairKey]*tableState
}

func newTableStore() *tableStore { return &tableStore{m: map[pairKey]*tableState{}} }

func (s *tableStore) get(k pairKey, cols []*collector.Collector) *tableState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.m[k]
	if ts == nil {
		ts = &tableState{table: collector.NewTable(nil, cols), collectors: cols}
		s.m[k] = ts
	}
	return ts
}

// dropExcept forgets the Tables of the object's pairs that are not in keep.
func (s *tableStore) dropExcept(obj rules.ObjectKey, keep map[pairKey]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if k.Object == obj && !keep[k] {
			delete(s.m, k)
		}
	}
}

// feed brings the Table up to date with the object, collectors, destinations (sorted) and WEC
// inputs of in: every destination, or only the WECs changed since the previous evaluation when
// that one fed the Table (feedMark), is given its input; the Table re-evaluates a row only when its
// input is not the same as before (the same cached report, equal labels).
func (ts *tableState) feed(in *objectInputs, cols []*collector.Collector, dests []string) {
	if v, changed := ts.object.update(in.obj); changed {
		ts.table.SetObject(v)
	}
	if !slices.Equal(ts.collectors, cols) {
		ts.table.SetCollectors(cols)
		ts.collectors = slices.Clone(cols)
	}
	if !slices.Equal(ts.dests, dests) {
		ts.table.SetDestinations(dests)
	}
	for _, name := range ts.stale(in, &ts.dests, dests, ts.table.Inputs(), ts.table.RemoveWEC) {
		r := in.reportedOnce(name)
		ts.table.UpsertWEC(collector.WEC{Name: name, Labels: in.cluster(name), Status: r.status, LastUpdate: r.at})
	}
	ts.fed(in)
}

// destsCache holds each Binding's destinations as a sorted set, per Binding resourceVersion. The
// slices it returns are shared and never modified.
type destsCache struct {
	mu sync.Mutex
	m  map[types.UID]destsEntry
}

type destsEntry struct {
	rv    string
	dests []string
}

func newDestsCache() *destsCache { return &destsCache{m: map[types.UID]destsEntry{}} }

func (c *destsCache) of(b *controlv1alpha1.Binding) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[b.UID]; ok && e.rv == b.ResourceVersion {
		return e.dests
	}
	d := rules.Destinations(&b.Spec)
	c.m[b.UID] = destsEntry{rv: b.ResourceVersion, dests: d}
	return d
}

func (c *destsCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
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
	r            wecReport
}

func newReportCache() *reportCache { return &reportCache{m: map[types.UID]reportEntry{}} }

// get returns ws's cached report; a nil ws (no WorkStatus) is never cached.
func (c *reportCache) get(ws *controlv1alpha1.WorkStatus, prunerRV string) (wecReport, bool) {
	if ws == nil {
		return wecReport{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[ws.UID]
	if !ok || e.rv != ws.ResourceVersion || e.prunerRV != prunerRV {
		return wecReport{}, false
	}
	return e.r, true
}

func (c *reportCache) put(ws *controlv1alpha1.WorkStatus, prunerRV string, r wecReport) {
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
	m  map[rules.ObjectKey]memoEntry
}

type memoEntry struct {
	uid    types.UID
	status string
	// skipped are the status fields the write left out (owned by other managers, or rejected).
	skipped []string
}

func newReturnMemo() *returnMemo { return &returnMemo{m: map[rules.ObjectKey]memoEntry{}} }

func (r *returnMemo) get(k rules.ObjectKey, uid types.UID) (string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[k]; ok && e.uid == uid {
		return e.status, e.skipped
	}
	return "", nil
}

func (r *returnMemo) set(k rules.ObjectKey, uid types.UID, status string, skipped []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = memoEntry{uid: uid, status: status, skipped: skipped}
}

func (r *returnMemo) forget(k rules.ObjectKey) {
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

func newPrunerCache() *prunerCache { return &prunerCache{m: map[string]prunerEntry{}} }

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

// returnState is the aggregation engine's incremental State of one object, plus the signature of
// what each WEC's row was last fed.
type returnState struct {
	feedMark
	gk     schema.GroupKind
	state  *aggregation.State
	object objectView
	q      []string // the qualified WECs last fed, sorted; shared, never modified
	sigs   map[string]string
}

// returnStates holds one returnState per object whose status is returned; like Tables, each is
// used by the one worker that holds the object's key.
type returnStates struct {
	mu sync.Mutex
	m  map[rules.ObjectKey]*returnState
}

func newReturnStates() *returnStates { return &returnStates{m: map[rules.ObjectKey]*returnState{}} }

func (r *returnStates) get(k rules.ObjectKey, gk schema.GroupKind, e aggregationStates) *returnState {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.m[k]
	if rs == nil || rs.gk != gk {
		rs = &returnState{gk: gk, state: e.NewState(gk), sigs: map[string]string{}}
		r.m[k] = rs
	}
	return rs
}

func (r *returnStates) forget(k rules.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

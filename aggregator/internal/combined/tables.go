package combined

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/policy/collector"
)

// pairKey identifies a (workload object, BindingPolicy) pair.
type pairKey struct {
	Object rules.ObjectKey
	Policy types.UID
}

// tableState is the collector engine's incremental Table of one pair, plus what it was last fed,
// so that a reconcile feeds only what changed: one changed WorkStatus re-evaluates one row.
type tableState struct {
	inputs.FeedMark
	table      *collector.Table
	object     inputs.ObjectView
	collectors []*collector.Collector
	dests      []string // sorted; shared with inputs.DestsCache, never modified
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
// that one fed the Table (inputs.FeedMark), is given its input; the Table re-evaluates a row only when its
// input is not the same as before (the same cached report, equal labels).
func (ts *tableState) feed(in *inputs.Object, cols []*collector.Collector, dests []string) {
	if v, changed := ts.object.Update(in.Obj); changed {
		ts.table.SetObject(v)
	}
	if !slices.Equal(ts.collectors, cols) {
		ts.table.SetCollectors(cols)
		ts.collectors = slices.Clone(cols)
	}
	if !slices.Equal(ts.dests, dests) {
		ts.table.SetDestinations(dests)
	}
	for _, name := range ts.Stale(in, &ts.dests, dests, ts.table.Inputs(), ts.table.RemoveWEC) {
		r := in.ReportedOnce(name)
		ts.table.UpsertWEC(collector.WEC{Name: name, Labels: in.Cluster(name), Status: r.Status, LastUpdate: r.At, Unavailable: r.Oversize})
	}
	ts.Fed(in)
}

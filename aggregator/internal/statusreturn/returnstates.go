package statusreturn

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/policy/aggregation"
)

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

// returnState is the aggregation engine's incremental State of one object, plus the signature of
// what each WEC's row was last fed.
type returnState struct {
	inputs.FeedMark
	gk     schema.GroupKind
	state  *aggregation.State
	object inputs.ObjectView
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

package pacing

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// FairQueue orders the waiting keys of a work queue by fair queuing across flows (round robin,
// as the apiserver's API Priority and Fairness serves its flows, without weights): each waiting
// key belongs to a flow — for the objects controller, the WEC whose WorkStatus event queued it
// (docs/controller.md "Fairness across WECs") — and the workers take one key of each flow that has
// waiting keys in turn, in arrival order within a flow. A flow with many waiting keys (a WEC that
// reports often) gets one worker's turn in every round, as any other: the keys of the other flows
// do not wait behind all of its keys, only behind at most one per flow.
//
// It is the ordering part of client-go's work queue (workqueue.Queue): client-go's queue keeps
// deduplicating waiting keys, holding a key processed at most once at a time and re-adding it
// after Done, and the delaying and rate-limiting queues wrap it unchanged. The flow of a key is
// the one Note gave it last before it was pushed; a key without a note is in the flow "". When a
// waiting key is queued again from another flow (Touch), it also joins that flow's turn, and is
// taken at whichever turn comes first.
//
// It is work-conserving: a worker never waits while a key waits, whatever its flow.
type FairQueue[K comparable] struct {
	mu      sync.Mutex
	flows   map[string]*fifo[K] // flows with entries, each in arrival order
	ring    []string            // the flows with entries, in turn order
	next    int                 // ring index of the flow whose turn is next
	waiting map[K]string        // waiting key → the flow it was pushed into
	noted   map[K]string        // key → the flow of its latest event, until pushed or touched
}

var _ workqueue.Queue[string] = (*FairQueue[string])(nil)

// NewFairQueue returns an empty FairQueue.
func NewFairQueue[K comparable]() *FairQueue[K] {
	return &FairQueue[K]{flows: map[string]*fifo[K]{}, waiting: map[K]string{}, noted: map[K]string{}}
}

// Note says that the next Add of key comes from flow. Call it before the Add.
func (q *FairQueue[K]) Note(key K, flow string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.noted[key] = flow
}

// Push adds a key that is not waiting (client-go's queue calls it).
func (q *FairQueue[K]) Push(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	flow := q.noted[key]
	delete(q.noted, key)
	q.waiting[key] = flow
	q.enter(flow, key)
}

// Touch is called when a waiting key is added again: from another flow, the key also joins that
// flow's turn.
func (q *FairQueue[K]) Touch(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	flow, ok := q.noted[key]
	if !ok {
		return
	}
	delete(q.noted, key)
	if cur, waiting := q.waiting[key]; waiting && cur != flow {
		q.enter(flow, key)
	}
}

// enter appends key to flow's entries, giving the flow a turn if it had none.
func (q *FairQueue[K]) enter(flow string, key K) {
	f := q.flows[flow]
	if f == nil {
		f = &fifo[K]{}
		q.flows[flow] = f
		q.ring = append(q.ring, flow)
	}
	f.push(key)
}

// Len is the number of waiting keys.
func (q *FairQueue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// Pop takes the next waiting key: the first of the flow whose turn it is (client-go's queue calls
// it only when Len > 0). Entries of keys taken already (through another flow) are skipped.
func (q *FairQueue[K]) Pop() K {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ring) > 0 {
		if q.next >= len(q.ring) {
			q.next = 0
		}
		name := q.ring[q.next]
		f := q.flows[name]
		for f.len() > 0 {
			key := f.pop()
			if _, ok := q.waiting[key]; !ok {
				continue // taken from another flow's turn
			}
			delete(q.waiting, key)
			if f.len() == 0 {
				q.drop(q.next)
			} else {
				q.next++
			}
			return key
		}
		q.drop(q.next)
	}
	var zero K
	return zero // not reached: client-go pops only when Len > 0
}

// drop removes the flow at ring index i, which has no entries left.
func (q *FairQueue[K]) drop(i int) {
	delete(q.flows, q.ring[i])
	q.ring = append(q.ring[:i], q.ring[i+1:]...)
}

// fifo is a flow's entries in arrival order.
type fifo[K comparable] struct {
	items []K
	head  int
}

func (f *fifo[K]) len() int { return len(f.items) - f.head }

func (f *fifo[K]) push(k K) { f.items = append(f.items, k) }

func (f *fifo[K]) pop() K {
	var zero K
	k := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	if f.head > 32 && f.head*2 > len(f.items) { // reuse the front half
		f.items = append(f.items[:0], f.items[f.head:]...)
		f.head = 0
	}
	return k
}

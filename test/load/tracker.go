package load

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// pendingWrite is a write not yet reflected downstream.
type pendingWrite struct {
	seq  int64
	sent time.Time
}

// reflection is a write and when a downstream object first reflected it.
type reflection struct {
	obj      int
	seq      int64
	sent, at time.Time
}

// tracker matches writes to the downstream objects that reflect them. Per object it keeps the
// writes not yet reflected, in sequence order; a downstream object showing sequence number m
// reflects every write of that object up to m.
type tracker struct {
	mu          sync.Mutex
	pending     [][]pendingWrite
	seen        []int64 // per object, the largest sequence number seen downstream
	done        []reflection
	lastReflect time.Time
}

func newTracker(objects int) *tracker {
	return &tracker{pending: make([][]pendingWrite, objects), seen: make([]int64, objects)}
}

func (t *tracker) add(j int, seq int64, sent time.Time) {
	t.mu.Lock()
	t.pending[j] = append(t.pending[j], pendingWrite{seq, sent})
	t.mu.Unlock()
}

func (t *tracker) reflect(j int, upto int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if upto > t.seen[j] {
		t.seen[j] = upto
	}
	p := t.pending[j]
	k := 0
	for k < len(p) && p[k].seq <= upto {
		t.done = append(t.done, reflection{obj: j, seq: p[k].seq, sent: p[k].sent, at: now})
		k++
	}
	if k > 0 {
		t.pending[j] = p[k:]
		t.lastReflect = now
	}
}

// outstanding is the number of writes not yet reflected.
func (t *tracker) outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, p := range t.pending {
		n += len(p)
	}
	return n
}

// take returns the writes reflected since the last take and the writes still pending (as
// reflections with a zero time), and forgets both.
func (t *tracker) take() (done, pending []reflection) {
	t.mu.Lock()
	defer t.mu.Unlock()
	done, t.done = t.done, nil
	for j, p := range t.pending {
		for _, w := range p {
			pending = append(pending, reflection{obj: j, seq: w.seq, sent: w.sent})
		}
		t.pending[j] = nil
	}
	return done, pending
}

// latencies are the write→reflection times of done.
func latencies(done []reflection) []time.Duration {
	out := make([]time.Duration, len(done))
	for i, r := range done {
		out[i] = r.at.Sub(r.sent)
	}
	return out
}

// caughtUp says whether every object's downstream sequence number is at least want(j).
func (t *tracker) caughtUp(objects []int, want func(int) int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range objects {
		if t.seen[j] < want(j) {
			return false
		}
	}
	return true
}

// settle waits until nothing is outstanding or the timeout passes.
func (t *tracker) settle(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return t.outstanding() == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%d writes not reflected after %s", t.outstanding(), timeout)
	}
	return err
}

// objectIndex parses "app-0042".
func objectIndex(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "app-"))
	return n, err == nil && strings.HasPrefix(name, "app-")
}

// markerOf returns the marker collector's value in a CombinedStatus.
func markerOf(u *unstructured.Unstructured) (int64, bool) {
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	for _, r := range results {
		rm, _ := r.(map[string]any)
		if rm["name"] != MarkerCollector {
			continue
		}
		rows, _ := rm["rows"].([]any)
		if len(rows) == 0 {
			return 0, false
		}
		cols, _, _ := unstructured.NestedSlice(rows[0].(map[string]any), "columns")
		if len(cols) == 0 {
			return 0, false
		}
		num, _ := cols[0].(map[string]any)["float"].(string)
		f, err := strconv.ParseFloat(num, 64)
		return int64(f), err == nil
	}
	return 0, false
}

// returnedSeqOf returns the sequence number in a Deployment's returned status.
func returnedSeqOf(u *unstructured.Unstructured) (int64, bool) { return SeqOf(u.Object) }

// follow watches a resource in the object namespace from now on and calls fn for every added
// or modified object, re-watching when the server closes the watch.
func follow(ctx context.Context, ri dynamic.ResourceInterface, fn func(*unstructured.Unstructured, time.Time)) error {
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range list.Items {
		fn(&list.Items[i], now)
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			wi, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					fn(u, time.Now())
				}
			}
			wi.Stop()
		}
	}()
	return nil
}

// reflected joins the two trackers' records of one phase into one Update per write: reflected
// when its CombinedStatus and, for a multi-WEC object, its returned status both reflected it
// (zero when either did not). It also returns the latest reflection.
func reflected(csDone, csPending, retDone, retPending []reflection) ([]Update, time.Time) {
	retAt := map[int64]time.Time{}
	for _, r := range retDone {
		retAt[r.seq] = r.at
	}
	for _, r := range retPending {
		retAt[r.seq] = time.Time{}
	}
	var out []Update
	var last time.Time
	for _, r := range slices.Concat(csDone, csPending) {
		u := Update{Sent: r.sent, Reflected: r.at}
		if at, multi := retAt[r.seq]; multi && (at.IsZero() || at.After(u.Reflected)) && !u.Reflected.IsZero() {
			u.Reflected = at
		}
		if u.Reflected.After(last) {
			last = u.Reflected
		}
		out = append(out, u)
	}
	return out, last
}

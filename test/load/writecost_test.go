package load

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/statusfold/statusfold/test/framework"
)

var flagWriteCost = flag.Bool("load.write-cost", false, "run TestAPIServerWriteCost")

// TestAPIServerWriteCost measures the apiserver's CPU time and the bytes it allocates (what drives
// its garbage collection) per write of a load-test-sized CombinedStatus — by server-side apply,
// also with fieldValidation=Ignore (what statusfold sends), update and merge patch — and of a
// WorkStatus status (the baseline's write), 4 writers over 100 objects, three repetitions. Run with
// `go test ./test/load -run TestAPIServerWriteCost -v -args -load.write-cost`.
func TestAPIServerWriteCost(t *testing.T) {
	if !*flagWriteCost {
		t.Skip("run with -load.write-cost")
	}
	ctx := context.Background()
	cp, pid, dyn := costControlPlane(t)
	admin, err := kubernetes.NewForConfig(cp.Config) // for the apiserver's metrics
	if err != nil {
		t.Fatal(err)
	}
	w := newCostWriters(ctx, t, dyn)
	methods := w.methods()
	perWrite := map[string][]time.Duration{}
	allocPerWrite := map[string][]float64{}
	pool := &seqWriter{workers: costWorkers}
	var seq atomic.Int64
	for range 3 {
		for _, m := range methods {
			w.forget() // other methods wrote since: read each object again
			cpu := startCPU(pid)
			alloc0, err := apiserverAllocated(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := pool.parallel(ctx, costWrites, func(_ context.Context, k int) error {
				return m.write(k%costObjects, int(seq.Add(1)))
			}); err != nil {
				t.Errorf("%s: %v", m.name, err)
			}
			took := time.Since(start)
			c := cpu.per(costWrites)
			alloc1, err := apiserverAllocated(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			a := (alloc1 - alloc0) / costWrites
			perWrite[m.name] = append(perWrite[m.name], c)
			allocPerWrite[m.name] = append(allocPerWrite[m.name], a)
			t.Logf("%-46s %d writes at %4.0f/s, apiserver CPU %s, %.0f KB allocated per write", m.name, costWrites, float64(costWrites)/took.Seconds(), c.Round(time.Microsecond), a/1e3)
		}
	}
	for _, m := range methods {
		t.Logf("median %-46s apiserver CPU %s, %.0f KB allocated per write", m.name,
			median(perWrite[m.name]).Round(time.Microsecond), median(allocPerWrite[m.name])/1e3)
	}
}

// The size of TestAPIServerWriteCost: its namespace, objects, writes per method and repetition,
// and concurrent writers.
const (
	costNamespace                        = "cost"
	costObjects, costWrites, costWorkers = 100, 2000, 4
)

// costWriters writes TestAPIServerWriteCost's objects: costObjects CombinedStatuses and as many
// WorkStatuses in costNamespace.
type costWriters struct {
	ctx      context.Context
	css, wss dynamic.ResourceInterface
	mu       sync.Mutex
	current  map[int]*unstructured.Unstructured // for updates: the object as last written in this repetition
}

// newCostWriters creates the namespace and the objects.
func newCostWriters(ctx context.Context, t *testing.T, dyn dynamic.Interface) *costWriters {
	t.Helper()
	ns := costNamespace
	if _, err := dyn.Resource(namespaceGVR).Create(ctx, namespaceObject(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &costWriters{ctx: ctx, css: dyn.Resource(combinedStatusGVR).Namespace(ns), wss: dyn.Resource(WorkStatusGVR).Namespace(ns),
		current: map[int]*unstructured.Unstructured{}}
	for i := range costObjects {
		if _, err := w.css.Create(ctx, CombinedStatusBody(ns, ObjectName(i), 20, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.wss.Create(ctx, WorkStatus(WDSName, ns, ns, ObjectName(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// forget forgets the objects as last written: the next update reads each again.
func (w *costWriters) forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.current)
}

// costMethod is one way of writing object i with sequence number seq.
type costMethod struct {
	name  string
	write func(i, seq int) error
}

// methods are the ways of writing compared, the WorkStatus status (the baseline's write) last.
func (w *costWriters) methods() []costMethod {
	ctx, ns, css := w.ctx, costNamespace, w.css
	return []costMethod{
		{"CombinedStatus apply", func(i, seq int) error {
			cs := CombinedStatusBody(ns, ObjectName(i), 20, seq)
			_, err := css.Apply(ctx, cs.GetName(), cs, metav1.ApplyOptions{FieldManager: "statusfold", Force: true})
			return err
		}},
		{"CombinedStatus apply, fieldValidation=Ignore", func(i, seq int) error {
			b, err := json.Marshal(CombinedStatusBody(ns, ObjectName(i), 20, seq).Object)
			if err != nil {
				return err
			}
			_, err = css.Patch(ctx, ObjectName(i), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "statusfold", Force: ptr.To(true), FieldValidation: metav1.FieldValidationIgnore})
			return err
		}},
		{"CombinedStatus update", w.update},
		{"CombinedStatus merge patch", func(i, seq int) error {
			b, _ := json.Marshal(map[string]any{"results": CombinedStatusBody(ns, ObjectName(i), 20, seq).Object["results"]})
			_, err := css.Patch(ctx, ObjectName(i), types.MergePatchType, b, metav1.PatchOptions{FieldManager: "statusfold"})
			return err
		}},
		{"WorkStatus status merge patch", func(i, seq int) error {
			b, _ := json.Marshal(map[string]any{"status": DeploymentStatus(ObjectName(i), int64(seq), 3, int64(seq%4))})
			_, err := w.wss.Patch(ctx, WorkStatus(WDSName, ns, ns, ObjectName(i)).GetName(), types.MergePatchType, b, metav1.PatchOptions{}, "status")
			return err
		}},
	}
}

// update writes the results of CombinedStatus i with an update (PUT) of its last written state.
func (w *costWriters) update(i, seq int) error {
	w.mu.Lock()
	cur := w.current[i]
	w.mu.Unlock()
	if cur == nil {
		var err error
		if cur, err = w.css.Get(w.ctx, ObjectName(i), metav1.GetOptions{}); err != nil {
			return err
		}
	}
	cur = cur.DeepCopy()
	cur.Object["results"] = CombinedStatusBody(costNamespace, ObjectName(i), 20, seq).Object["results"]
	out, err := w.css.Update(w.ctx, cur, metav1.UpdateOptions{FieldManager: "statusfold"})
	w.mu.Lock()
	w.current[i] = out // nil after an error: read again
	w.mu.Unlock()
	return err
}

// median returns the middle of xs (the upper one of an even count), leaving xs as it is.
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// costControlPlane starts a control plane for a cost measurement and returns it, the
// kube-apiserver's process ID (for its CPU time) and an unthrottled dynamic client.
func costControlPlane(t *testing.T) (*framework.ControlPlane, int, dynamic.Interface) {
	t.Helper()
	framework.RequireIntegration(t)
	cp := framework.RunControlPlane(t)
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	pid := FindAPIServer(u.Port())
	if pid == 0 {
		t.Fatal("kube-apiserver process not found")
	}
	dyn, err := dynamic.NewForConfig(unthrottled(cp.Config))
	if err != nil {
		t.Fatal(err)
	}
	return cp, pid, dyn
}

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/test/load"
)

// TestCombinedStatusWriteCostByShape measures the apiserver's CPU time per CombinedStatus write
// by the shape of the write, to say what makes statusfold's writes cheaper (docs/performance.md,
// "Writing cheaper"): server-side apply of the load test's body (26 rows), the same with
// fieldValidation=Ignore (the apiserver then parses the body as YAML once less), of a smaller
// body (8 rows: the select limited to 2), with three other field managers on the object, an update
// (PUT) of the load test's body, and — the baseline — a WorkStatus status merge patch; 2
// writers, 250 writes per shape, three repetitions, medians. It also checks the managedFields that
// statusfold's apply leaves: one entry, with results recorded as one atomic field, not per row.
// A measurement (≈60 s of a 2-core machine, control plane included): run with STATUSFOLD_WRITE_COST=1.
func TestCombinedStatusWriteCostByShape(t *testing.T) {
	if os.Getenv("STATUSFOLD_WRITE_COST") == "" {
		t.Skip("a measurement: set STATUSFOLD_WRITE_COST=1")
	}
	cp := framework.RunControlPlane(t)
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	pid := load.FindAPIServer(u.Port())
	if pid == 0 {
		t.Fatal("kube-apiserver process not found")
	}
	w := newWriteCost(t, cp)
	w.createObjects()

	// statusfold's apply leaves one managedFields entry whose fieldsV1 names results as a whole.
	got, err := w.css.Get(w.ctx, w.plain[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mf := got.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != "statusfold" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managedFields after statusfold's apply: %+v, want one Apply entry of statusfold", mf)
	}
	if fields := string(mf[0].FieldsV1.Raw); !strings.Contains(fields, `"f:results":{}`) || strings.Contains(fields, "f:rows") {
		t.Errorf("statusfold's fieldsV1 %s: want results recorded as one atomic field", fields)
	}

	shapes := w.shapes()
	perWrite := make([][]time.Duration, len(shapes))
	for range writeCostRepetitions {
		for si, s := range shapes {
			perWrite[si] = append(perWrite[si], w.measure(pid, s))
		}
	}
	base := median(perWrite[len(shapes)-1])
	var table strings.Builder
	fmt.Fprintf(&table, "%-53s %12s %14s %s\n", "write", "body (JSON)", "CPU per write", "× WorkStatus write")
	for si, s := range shapes {
		m := median(perWrite[si])
		if m <= 0 {
			t.Errorf("%s: no apiserver CPU measured (%v)", s.name, perWrite[si])
		}
		body := "—"
		if s.bytes > 0 {
			body = fmt.Sprintf("%d B", s.bytes)
		}
		fmt.Fprintf(&table, "%-53s %12s %14s %.2f\n", s.name, body, m.Round(10*time.Microsecond), float64(m)/float64(base))
	}
	t.Log("medians of 3 repetitions:\n" + table.String())
}

// The size of TestCombinedStatusWriteCostByShape: objects per shape, writes per shape and
// repetition, concurrent writers, repetitions.
const writeCostObjects, writeCostWrites, writeCostWriters, writeCostRepetitions = 40, 250, 2, 3

// writeCost holds TestCombinedStatusWriteCostByShape's objects, in namespace "cost": four sets of
// CombinedStatuses (one per way of writing them) and a WorkStatus per object.
type writeCost struct {
	t        *testing.T
	ctx      context.Context
	ns       string
	css, wss dynamic.ResourceInterface
	// The CombinedStatuses: applied plainly, with three other field managers, updated, applied
	// with fieldValidation=Ignore.
	plain, shared, updated, ignored []string
	seq                             atomic.Int64 // the next write's sequence number
	current                         sync.Map     // updated object name → its last written state
}

func newWriteCost(t *testing.T, cp *framework.ControlPlane) *writeCost {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "cost"
	ensureNamespace(t, cp, ns)
	names := func(prefix string) []string {
		var n []string
		for i := range writeCostObjects {
			n = append(n, fmt.Sprintf("%s-%02d", prefix, i))
		}
		return n
	}
	return &writeCost{t: t, ctx: context.Background(), ns: ns,
		css:   dyn.Resource(controlv1alpha1.GroupVersion.WithResource("combinedstatuses")).Namespace(ns),
		wss:   dyn.Resource(load.WorkStatusGVR).Namespace(ns),
		plain: names("plain"), shared: names("shared"), updated: names("updated"), ignored: names("ignored")}
}

// apply server-side applies the CombinedStatus name as statusfold does (with force), with rows
// rows in its select and seq in its marker.
func (w *writeCost) apply(name string, rows, seq int) error {
	_, err := w.css.Apply(w.ctx, name, load.CombinedStatusBody(w.ns, name, rows, seq), metav1.ApplyOptions{FieldManager: "statusfold", Force: true})
	return err
}

// createObjects creates every CombinedStatus (the shared ones with three other managers' labels)
// and every WorkStatus.
func (w *writeCost) createObjects() {
	t := w.t
	for i := range writeCostObjects {
		for _, n := range []string{w.plain[i], w.shared[i], w.updated[i], w.ignored[i]} {
			if err := w.apply(n, 20, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range []string{"kubectl-label", "audit", "backup"} { // other managers, each with one label
			patch := fmt.Sprintf(`{"apiVersion":%q,"kind":"CombinedStatus","metadata":{"name":%q,"labels":{"example.com/%s":"x"}}}`,
				controlv1alpha1.GroupVersion.String(), w.shared[i], m)
			if _, err := w.css.Patch(w.ctx, w.shared[i], types.ApplyPatchType, []byte(patch), metav1.PatchOptions{FieldManager: m}); err != nil {
				t.Fatal(err)
			}
		}
		ws := load.WorkStatus("wds1", w.ns, w.ns, load.ObjectName(i))
		if _, err := w.wss.Create(w.ctx, ws, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// writeShape is one way of writing: its name, the size of its body (0: not shown), and one write
// of object i.
type writeShape struct {
	name  string
	bytes int
	write func(i int) error
}

// shapes are the ways of writing compared, the baseline (a WorkStatus status merge patch) last.
func (w *writeCost) shapes() []writeShape {
	next := func() int { return int(w.seq.Add(1)) }
	shapes := []writeShape{
		{"CombinedStatus apply, 26 rows (load test)", 0, func(i int) error { return w.apply(w.plain[i], 20, next()) }},
		{"CombinedStatus apply, 26 rows, fieldValidation=Ignore", 0, func(i int) error {
			b, err := json.Marshal(load.CombinedStatusBody(w.ns, w.ignored[i], 20, next()).Object)
			if err != nil {
				return err
			}
			_, err = w.css.Patch(w.ctx, w.ignored[i], types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "statusfold",
				Force: ptr.To(true), FieldValidation: metav1.FieldValidationIgnore})
			return err
		}},
		{"CombinedStatus apply, 8 rows", 0, func(i int) error { return w.apply(w.plain[i], 2, next()) }},
		{"CombinedStatus apply, 26 rows, 4 managers", 0, func(i int) error { return w.apply(w.shared[i], 20, next()) }},
		{"CombinedStatus update, 26 rows", 0, w.update},
		{"WorkStatus status merge patch (baseline)", 0, func(i int) error {
			b, _ := json.Marshal(map[string]any{"status": load.DeploymentStatus(load.ObjectName(i), w.seq.Add(1), 3, 1)})
			name := load.WorkStatus("wds1", w.ns, w.ns, load.ObjectName(i)).GetName()
			_, err := w.wss.Patch(w.ctx, name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
			return err
		}},
	}
	for i := range shapes[:4] {
		rows := map[int]int{0: 20, 1: 20, 2: 2, 3: 20}[i]
		b, _ := json.Marshal(load.CombinedStatusBody(w.ns, w.plain[0], rows, 1).Object)
		shapes[i].bytes = len(b)
	}
	return shapes
}

// update writes the results of the updated CombinedStatus of object i with an update (PUT) of
// its last written state.
func (w *writeCost) update(i int) error {
	var cur *unstructured.Unstructured
	if v, ok := w.current.Load(w.updated[i]); ok {
		cur = v.(*unstructured.Unstructured).DeepCopy()
	} else {
		var err error
		if cur, err = w.css.Get(w.ctx, w.updated[i], metav1.GetOptions{}); err != nil {
			return err
		}
	}
	cur.Object["results"] = load.CombinedStatusBody(w.ns, w.updated[i], 20, int(w.seq.Add(1))).Object["results"]
	out, err := w.css.Update(w.ctx, cur, metav1.UpdateOptions{FieldManager: "statusfold"})
	if err != nil {
		w.current.Delete(w.updated[i])
		return err
	}
	w.current.Store(w.updated[i], out)
	return nil
}

// measure makes writeCostWrites writes of shape s on writeCostWriters writers, and returns the
// apiserver's (process pid's) CPU time per write.
func (w *writeCost) measure(pid int, s writeShape) time.Duration {
	t := w.t
	start, err := load.ReadProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range writeCostWriters {
		wg.Go(func() {
			for n := next.Add(1) - 1; n < writeCostWrites; n = next.Add(1) - 1 {
				if err := s.write(int(n) % writeCostObjects); err != nil {
					if failed.Add(1) == 1 {
						t.Errorf("%s: %v", s.name, err)
					}
				}
			}
		})
	}
	wg.Wait()
	end, err := load.ReadProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	per := (end.CPU - start.CPU) / writeCostWrites
	t.Logf("%-53s %d writes at %4.0f/s, apiserver CPU %s per write", s.name, writeCostWrites,
		writeCostWrites/time.Since(began).Seconds(), per.Round(10*time.Microsecond))
	return per
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

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
	ctx := context.Background()
	cp := framework.RunControlPlane(t)
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	pid := load.FindAPIServer(u.Port())
	if pid == 0 {
		t.Fatal("kube-apiserver process not found")
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const objects, writes, writers, repetitions = 40, 250, 2, 3
	csGVR := controlv1alpha1.GroupVersion.WithResource("combinedstatuses")
	names := func(prefix string) []string {
		var n []string
		for i := range objects {
			n = append(n, fmt.Sprintf("%s-%02d", prefix, i))
		}
		return n
	}
	const ns = "cost"
	ensureNamespace(t, cp, ns)
	css := dyn.Resource(csGVR).Namespace(ns)
	wss := dyn.Resource(load.WorkStatusGVR).Namespace(ns)
	apply := func(name string, rows, seq int) error {
		_, err := css.Apply(ctx, name, load.CombinedStatusBody(ns, name, rows, seq), metav1.ApplyOptions{FieldManager: "statusfold", Force: true})
		return err
	}
	plain, shared, updated, ignored := names("plain"), names("shared"), names("updated"), names("ignored")
	for i := range objects {
		for _, n := range []string{plain[i], shared[i], updated[i], ignored[i]} {
			if err := apply(n, 20, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range []string{"kubectl-label", "audit", "backup"} { // other managers, each with one label
			patch := fmt.Sprintf(`{"apiVersion":%q,"kind":"CombinedStatus","metadata":{"name":%q,"labels":{"example.com/%s":"x"}}}`,
				controlv1alpha1.GroupVersion.String(), shared[i], m)
			if _, err := css.Patch(ctx, shared[i], types.ApplyPatchType, []byte(patch), metav1.PatchOptions{FieldManager: m}); err != nil {
				t.Fatal(err)
			}
		}
		ws := load.WorkStatus("wds1", ns, ns, load.ObjectName(i))
		if _, err := wss.Create(ctx, ws, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// statusfold's apply leaves one managedFields entry whose fieldsV1 names results as a whole.
	got, err := css.Get(ctx, plain[0], metav1.GetOptions{})
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

	var current sync.Map // updated object name → its last written state
	var seq atomic.Int64
	shapes := []struct {
		name  string
		bytes int
		write func(i int) error
	}{
		{"CombinedStatus apply, 26 rows (load test)", 0, func(i int) error { return apply(plain[i], 20, int(seq.Add(1))) }},
		{"CombinedStatus apply, 26 rows, fieldValidation=Ignore", 0, func(i int) error {
			b, err := json.Marshal(load.CombinedStatusBody(ns, ignored[i], 20, int(seq.Add(1))).Object)
			if err != nil {
				return err
			}
			_, err = css.Patch(ctx, ignored[i], types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "statusfold",
				Force: ptr.To(true), FieldValidation: metav1.FieldValidationIgnore})
			return err
		}},
		{"CombinedStatus apply, 8 rows", 0, func(i int) error { return apply(plain[i], 2, int(seq.Add(1))) }},
		{"CombinedStatus apply, 26 rows, 4 managers", 0, func(i int) error { return apply(shared[i], 20, int(seq.Add(1))) }},
		{"CombinedStatus update, 26 rows", 0, func(i int) error {
			var cur *unstructured.Unstructured
			if v, ok := current.Load(updated[i]); ok {
				cur = v.(*unstructured.Unstructured).DeepCopy()
			} else if cur, err = css.Get(ctx, updated[i], metav1.GetOptions{}); err != nil {
				return err
			}
			cur.Object["results"] = load.CombinedStatusBody(ns, updated[i], 20, int(seq.Add(1))).Object["results"]
			out, err := css.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "statusfold"})
			if err != nil {
				current.Delete(updated[i])
				return err
			}
			current.Store(updated[i], out)
			return nil
		}},
		{"WorkStatus status merge patch (baseline)", 0, func(i int) error {
			b, _ := json.Marshal(map[string]any{"status": load.DeploymentStatus(load.ObjectName(i), seq.Add(1), 3, 1)})
			name := load.WorkStatus("wds1", ns, ns, load.ObjectName(i)).GetName()
			_, err := wss.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}, "status")
			return err
		}},
	}
	for i := range shapes[:4] {
		rows := map[int]int{0: 20, 1: 20, 2: 2, 3: 20}[i]
		b, _ := json.Marshal(load.CombinedStatusBody(ns, plain[0], rows, 1).Object)
		shapes[i].bytes = len(b)
	}
	perWrite := make([][]time.Duration, len(shapes))
	for range repetitions {
		for si, s := range shapes {
			start, err := load.ReadProcStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			var next atomic.Int64
			var failed atomic.Int64
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for n := next.Add(1) - 1; n < writes; n = next.Add(1) - 1 {
						if err := s.write(int(n) % objects); err != nil {
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
			per := (end.CPU - start.CPU) / writes
			perWrite[si] = append(perWrite[si], per)
			t.Logf("%-53s %d writes at %4.0f/s, apiserver CPU %s per write", s.name, writes,
				writes/time.Since(began).Seconds(), per.Round(10*time.Microsecond))
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

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

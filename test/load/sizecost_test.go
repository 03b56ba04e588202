package load

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/statusfold/statusfold/policy/sizebudget"
)

var flagSizeCost = flag.Int("load.size-cost", 0, "run TestCombinedStatusSizeCost with this many repetitions")

// TestCombinedStatusSizeCost measures a CombinedStatus write at the object size budget
// (sizebudget.DefaultBytes of JSON, as statusfold writes it when trimmed) against one of 10 KB,
// in the same run: the write's latency and the apiserver's CPU time per write. Each repetition
// writes each size sizeCostWrites times, one write at a time (server-side apply with
// fieldValidation=Ignore, what statusfold sends), the sizes alternating; the medians over the
// repetitions are logged. Run with
// `go test ./test/load -run TestCombinedStatusSizeCost -v -args -load.size-cost=5`.
func TestCombinedStatusSizeCost(t *testing.T) {
	reps := *flagSizeCost
	if reps <= 0 {
		t.Skip("run with -load.size-cost=N")
	}
	ctx := context.Background()
	_, pid, dyn := costControlPlane(t)
	if _, err := dyn.Resource(namespaceGVR).Create(ctx, namespaceObject(costNamespace), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	css := dyn.Resource(combinedStatusGVR).Namespace(costNamespace)
	sizes := []struct {
		name  string
		bytes int
	}{{"10 KB", 10 << 10}, {"at the budget", sizebudget.DefaultBytes}}
	lat := make([][]time.Duration, len(sizes))
	cpu := make([][]time.Duration, len(sizes))
	for range reps {
		for si, s := range sizes {
			var took []time.Duration
			meter := startCPU(pid)
			for k := range sizeCostWrites {
				b, err := json.Marshal(sizedCombinedStatus(s.name, s.bytes, k).Object)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = css.Patch(ctx, sizeCostName(s.name), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "statusfold",
					Force: ptr.To(true), FieldValidation: metav1.FieldValidationIgnore})
				took = append(took, time.Since(start))
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
			}
			c := meter.per(sizeCostWrites)
			lat[si] = append(lat[si], median(took))
			cpu[si] = append(cpu[si], c)
			t.Logf("%-14s %d writes of %d bytes: median latency %s, apiserver CPU %s per write", s.name, sizeCostWrites,
				len(mustJSON(t, sizedCombinedStatus(s.name, s.bytes, 0).Object)), median(took).Round(time.Microsecond), c.Round(time.Microsecond))
		}
	}
	for si, s := range sizes {
		t.Logf("median of %d runs: %-14s write latency %s, apiserver CPU %s per write", reps, s.name,
			median(lat[si]).Round(time.Microsecond), median(cpu[si]).Round(time.Microsecond))
	}
}

// sizeCostWrites is how many writes of each size one repetition makes.
const sizeCostWrites = 40

// sizeCostName is the CombinedStatus of the size named size: "size-10-kb", "size-at-the-budget".
func sizeCostName(size string) string {
	return "size-" + strings.ReplaceAll(strings.ToLower(size), " ", "-")
}

// sizedCombinedStatus is the load test's CombinedStatus shape with a result of rows of about 1 KB
// added until its JSON is about bytes long; seq makes each write differ.
func sizedCombinedStatus(size string, bytes, seq int) *unstructured.Unstructured {
	u := CombinedStatusBody(costNamespace, sizeCostName(size), 20, seq)
	base, _ := json.Marshal(u.Object)
	var rows []any
	for n := len(base); n+1100 <= bytes; n += 1050 {
		s := fmt.Sprintf("%06d", len(rows)) + strings.Repeat("s", 1000)
		rows = append(rows, map[string]any{"columns": []any{map[string]any{"type": "String", "string": s}}})
	}
	results := u.Object["results"].([]any)
	u.Object["results"] = append(results, map[string]any{"name": "load-statuses", "columnNames": []any{"status"}, "rows": rows})
	return u
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package load

import (
	"context"
	"encoding/json"
	"flag"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

var flagListCost = flag.Int("load.list-cost", 0, "run TestListCost with this many WorkStatuses")

// TestListCost measures what a paged list of every WorkStatus costs — the list an informer
// starts with, L3's baseline — with the response compressed (client-go's default: it asks for
// gzip, and the apiserver compresses every response over 128 KB) and uncompressed
// (rest.Config.DisableCompression): the time to list them all, and the apiserver's CPU time;
// three rounds, alternating, medians. Run with
// `go test ./test/load -run TestListCost -v -args -load.list-cost=20000`.
func TestListCost(t *testing.T) {
	n := *flagListCost
	if n <= 0 {
		t.Skip("run with -load.list-cost=N")
	}
	ctx := context.Background()
	cp, pid, dyn := costControlPlane(t)
	const wecs = 100
	for i := range wecs {
		if _, err := dyn.Resource(namespaceGVR).Create(ctx, namespaceObject(WECName(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := next.Add(1) - 1; k < int64(n); k = next.Add(1) - 1 {
				wec, obj := WECName(int(k)%wecs), ObjectName(int(k)/wecs)
				ws := WorkStatus(WDSName, wec, ObjectNamespace, obj)
				wss := dyn.Resource(WorkStatusGVR).Namespace(wec)
				if _, err := wss.Create(ctx, ws, metav1.CreateOptions{}); err != nil {
					if failed.Add(1) == 1 {
						t.Error(err)
					}
					continue
				}
				b, _ := json.Marshal(map[string]any{"status": DeploymentStatus(obj, k, 3, 1)})
				if _, err := wss.Patch(ctx, ws.GetName(), types.MergePatchType, b, metav1.PatchOptions{}, "status"); err != nil && failed.Add(1) == 1 {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ways := []struct {
		name     string
		compress bool
	}{{"gzip (client-go's default)", true}, {"uncompressed", false}}
	took := make([][]time.Duration, len(ways))
	cpu := make([][]time.Duration, len(ways))
	for range 3 {
		for wi, w := range ways {
			cfg := rest.CopyConfig(cp.Config)
			cfg.DisableCompression = !w.compress
			before, err := ReadProcStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			lp, err := listAll(ctx, cfg, 500)
			if err != nil {
				t.Fatal(err)
			}
			after, err := ReadProcStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			if lp.Objects != n {
				t.Fatalf("%s: listed %d WorkStatuses, want %d", w.name, lp.Objects, n)
			}
			took[wi] = append(took[wi], lp.Took)
			cpu[wi] = append(cpu[wi], after.CPU-before.CPU)
			t.Logf("%-28s %d WorkStatuses (%.0f B of JSON each) in %s, apiserver CPU %s", w.name, lp.Objects, lp.BytesPerObject,
				lp.Took.Round(time.Millisecond), (after.CPU - before.CPU).Round(time.Millisecond))
		}
	}
	for wi, w := range ways {
		slices.Sort(took[wi])
		slices.Sort(cpu[wi])
		t.Logf("median: %-28s list %s, apiserver CPU %s", w.name, took[wi][1].Round(time.Millisecond), cpu[wi][1].Round(time.Millisecond))
	}
}

package load

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

var flagListCost = flag.Int("load.list-cost", 0, "run TestListCost with this many WorkStatuses")

// TestListCost measures what a paged list of every WorkStatus costs — the list an informer
// starts with, L3's baseline, of the load test's fixture (100 WECs, N rounded up to a multiple
// of 100) — with the response compressed (client-go's default: it asks for
// gzip, and the apiserver compresses every response over 128 KB) and uncompressed
// (rest.Config.DisableCompression): the time to list them all, and the apiserver's CPU time;
// three repetitions, alternating, medians. Run with
// `go test ./test/load -run TestListCost -v -args -load.list-cost=20000`.
func TestListCost(t *testing.T) {
	n := *flagListCost
	if n <= 0 {
		t.Skip("run with -load.list-cost=N")
	}
	ctx := context.Background()
	cp, pid, _ := costControlPlane(t)
	const wecs = 100
	f := &Fixture{WECs: wecs, Objects: (n + wecs - 1) / wecs, Workers: 8, Logf: t.Logf}
	if _, err := f.Setup(ctx, cp.Config); err != nil {
		t.Fatal(err)
	}
	n = f.WECs * f.Objects
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

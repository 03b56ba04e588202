package kscompat

import (
	"context"
	"fmt"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// measureUpdates writes c1's WorkStatus `updates` times with a new `avail` and returns, for each,
// the time until the object's CombinedStatus shows the new SUM (polled every 5 ms).
func measureUpdates(t *testing.T, s *space, procs []*process, updates int, base int64) []time.Duration {
	t.Helper()
	ctx := context.Background()
	var out []time.Duration
	for k := range updates {
		avail := base + int64(k)
		st := baseStatus(0)
		st["avail"] = avail
		start := time.Now()
		if err := s.report(ctx, "c1", configMapRef(corpusNamespace, "o-latency"), st); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[sum] (Number:%d)", avail+1+2) // c2 reports avail 1, c3 avail 2
		deadline := time.Now().Add(2 * time.Minute)
		for {
			css, err := s.combinedStatuses(ctx, corpusNamespace)
			if err != nil {
				t.Fatal(err)
			}
			if cs := css["o-latency/latency"]; cs != nil && len(cs.Results) == 1 && rowsText(&cs.Results[0]) == want {
				break
			}
			for _, p := range procs {
				if p.exited() {
					t.Fatalf("%s exited", p.name)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("update %d: CombinedStatus never showed %s", k, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// TestEndToEndLatency measures WorkStatus update → CombinedStatus for KubeStellar's status
// controller and for statusfold (beside KubeStellar's binding controller), one after the other on
// the same apiserver, objects and Bindings: median of 10 updates each.
func TestEndToEndLatency(t *testing.T) {
	if !*speedFlag {
		t.Skip("benchmark: run with -kscompat.speed (make kscompat-speed)")
	}
	s := startSpace(t)
	ctx := context.Background()
	sumFixture(ctx, t, s, "latency")
	policy := bindingPolicy("latency", map[string]string{"kscompat": "latency"}, "", "configmaps",
		map[string]string{"kscompat": "latency"}, ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"a-sum"}})

	ks := s.startKubeStellar("binding,status")
	s.create(policy)
	ksTimes := measureUpdates(t, s, []*process{ks}, 11, 100)[1:] // the first waits for the controller's start
	ks.stop()
	if err := s.c.DeleteAllOf(ctx, &ksv1alpha1.CombinedStatus{}, client.InNamespace(corpusNamespace)); err != nil {
		t.Fatal(err)
	}

	ksb := s.startKubeStellar("binding")
	s.waitForLog(ksb, `"Starting controller" logger="setup" name="Binding"`, time.Minute)
	sf := s.startStatusfold()
	sfTimes := measureUpdates(t, s, []*process{ksb, sf}, 11, 200)[1:] // the first waits for statusfold's start
	med := func(ds []time.Duration) time.Duration {
		fs := make([]float64, len(ds))
		for i, d := range ds {
			fs[i] = float64(d)
		}
		return time.Duration(median(fs))
	}
	t.Logf("WorkStatus update → CombinedStatus, median of 10: KubeStellar %s (all: %v), statusfold %s (all: %v)",
		med(ksTimes).Round(time.Millisecond), ksTimes, med(sfTimes).Round(time.Millisecond), sfTimes)
}

package fanout

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"

	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
)

// knownKinds knows Deployments only.
type knownKinds struct{}

func (knownKinds) Known(gr schema.GroupResource) (resources.ResourceInfo, bool) {
	return deployRes, gr == deployRes.GVR.GroupResource()
}

// TestOversizeWorkStatusIsReported: a WorkStatus event whose status is over the cap is counted
// and reported on its workload object (a Warning Event naming the WEC, the size and the cap);
// one within the cap is not.
func TestOversizeWorkStatusIsReported(t *testing.T) {
	x := newHarness(t, seeded()...)
	rec := events.NewFakeRecorder(4)
	x.h.metrics = metrics.New()
	x.h.report = &report.Reporter{Log: logr.Discard(), Recorder: rec, Failures: report.NewThrottle(report.FailureWindow), Kinds: knownKinds{}}
	trim := itscache.Transform{MaxStatusBytes: 100}
	small := testutil.WireWorkStatus(t, "wec1", "d", 1, map[string]any{"replicas": 1})
	big := testutil.WireWorkStatus(t, "wec1", "d", 2, map[string]any{"items": strings.Repeat("x", 200)})
	for _, ws := range []any{small, big} {
		if _, err := trim.Trim(ws); err != nil {
			t.Fatal(err)
		}
	}
	before := promtest.ToFloat64(x.h.metrics.OversizeReports)
	x.h.onWorkStatus(nil, small)
	if n := promtest.ToFloat64(x.h.metrics.OversizeReports) - before; n != 0 || len(rec.Events) != 0 {
		t.Fatalf("a status within the cap: %v oversize reports, %d Events", n, len(rec.Events))
	}
	x.h.onWorkStatus(small, big)
	if n := promtest.ToFloat64(x.h.metrics.OversizeReports) - before; n != 1 {
		t.Errorf("oversize reports counted: %v, want 1", n)
	}
	select {
	case e := <-rec.Events:
		want := "Warning ReportedStatusTooLarge WEC wec1 reported a status of 212 bytes, over the cap of 100 bytes"
		if !strings.HasPrefix(e, want) {
			t.Errorf("Event %q, want it to start with %q", e, want)
		}
	default:
		t.Error("no Event")
	}
	if got := x.objects.items; len(got) == 0 || got[len(got)-1] != "apps/deployments/default/d" {
		t.Errorf("queued %v, want the object queued (the oversize report is evaluated too: its rows say why)", got)
	}
}

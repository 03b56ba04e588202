package statusreturn

import (
	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
)

// newTestReturner returns a status returner writing through f's client, with no schema to prune
// to, and a recorder of its Events.
func newTestReturner(f *testutil.FakeAPI) (*Returner, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(16)
	log := logr.Discard()
	failures := report.NewThrottle(report.FailureWindow)
	m := metrics.New()
	w := writer.New(f.Client(), nil, failures, m, nil, log, rec)
	return New(Config{Writer: w, OwnWrites: echo.New(nil), Metrics: m, Log: log, Recorder: rec,
		Report: &report.Reporter{Log: log, Recorder: rec, Failures: failures}}), rec
}

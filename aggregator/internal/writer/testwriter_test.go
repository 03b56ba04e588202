package writer

import (
	"github.com/go-logr/logr"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/tools/events"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
)

// newTestWriter returns a writer of f's client pruning to the schemas of schemas, with a
// recorder of its Events.
func newTestWriter(f *testutil.FakeAPI, schemas resolver.SchemaResolver) (*Writer, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(16)
	return New(f.Client(), schemas, report.NewThrottle(report.FailureWindow), metrics.New(), nil, logr.Discard(), rec), rec
}

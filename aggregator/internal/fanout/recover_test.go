package fanout

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
)

// TestHandlerPanicRecovered: a panic in an event handler is recovered and counted
// (statusfold_errors_total{where="panic"}) instead of ending the process, for every kind of event;
// the handler still runs for the next event.
func TestHandlerPanicRecovered(t *testing.T) {
	m := metrics.New()
	h := New(Config{Log: logr.Discard(), Metrics: m})
	calls := 0
	funcs := h.handlerFuncs(func(_, _ client.Object) {
		calls++
		panic("boom")
	})
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	before := testutil.ToFloat64(m.Errors.WithLabelValues("panic"))
	funcs.OnAdd(obj, false)
	funcs.OnUpdate(obj, obj)
	funcs.OnDelete(obj)
	if calls != 3 {
		t.Errorf("handler called %d times, want 3", calls)
	}
	if got := testutil.ToFloat64(m.Errors.WithLabelValues("panic")) - before; got != 3 {
		t.Errorf("%v panics counted, want 3", got)
	}
}

package aggregator

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=workstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// objectReconciler is the statusfold_objects controller's reconciler: one evaluation of one
// workload object gathers its inputs once and hands them to the CombinedStatus writer and, at the
// same time, to the status returner.
type objectReconciler struct {
	inputs   *gatherer
	combined *combinedStatusWriter
	returns  *statusReturner
	// pending is when the oldest WorkStatus event not yet acted on arrived, per object.
	pending *eventTimes
	metrics *metrics.Metrics
	// pacer paces the object's writes (nil: not paced); it forgets an object that is gone.
	pacer *pacing.Pacer[rules.ObjectKey]
}

// reconcile evaluates one workload object: its CombinedStatus objects and its own status.
func (r *objectReconciler) reconcile(ctx context.Context, key rules.ObjectKey) error {
	r.metrics.Evaluations.WithLabelValues("object").Inc()
	eventAt, hadEvent := r.pending.take(key)
	in, err := r.inputs.gather(ctx, key)
	if err != nil {
		if hadEvent {
			r.pending.mark(key, eventAt)
		}
		return err
	}
	// Neither output waits for the other's writes: the status return runs beside the CombinedStatus
	// writes (in series, each added a write's latency to the other). A panic there is raised
	// again here, where the controller recovers it.
	var wroteStatus bool
	var statusErr error
	var statusPanic any
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		defer func() {
			if p := recover(); p != nil {
				statusPanic = fmt.Sprintf("%v\n(in the status return)\n%s", p, debug.Stack())
			}
		}()
		wroteStatus, statusErr = r.returns.write(ctx, in)
	}()
	wroteCS, csErr := r.combined.sync(ctx, in)
	<-returned
	if statusPanic != nil {
		panic(statusPanic)
	}
	if err := errors.Join(csErr, statusErr); err != nil {
		return err
	}
	if in.obj == nil && r.pacer != nil {
		r.pacer.Forget(key)
	}
	if hadEvent && (wroteCS || wroteStatus) {
		r.metrics.Latency.Observe(time.Since(eventAt).Seconds())
	}
	return nil
}

package objects

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/combined"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/statusreturn"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=workstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// Reconciler is the statusfold_objects controller's reconciler: one evaluation of one
// workload object gathers its inputs once and hands them to the CombinedStatus writer and, at the
// same time, to the status returner.
type Reconciler struct {
	inputs   *inputs.Gatherer
	combined *combined.Writer
	returns  *statusreturn.Returner
	// pending is when the oldest WorkStatus event not yet acted on arrived, per object.
	pending *EventTimes
	metrics *metrics.Metrics
	// pacer paces the object's writes (nil: not paced); it forgets an object that is gone.
	pacer *pacing.Pacer[rules.ObjectKey]
}

// Config are a Reconciler's dependencies (see its fields of the same names).
type Config struct {
	Inputs   *inputs.Gatherer
	Combined *combined.Writer
	Returns  *statusreturn.Returner
	Pending  *EventTimes
	Metrics  *metrics.Metrics
	Pacer    *pacing.Pacer[rules.ObjectKey]
}

// New returns the objects reconciler of c's parts.
func New(c Config) *Reconciler {
	return &Reconciler{inputs: c.Inputs, combined: c.Combined, returns: c.Returns, pending: c.Pending, metrics: c.Metrics, pacer: c.Pacer}
}

// Reconcile evaluates one workload object: its CombinedStatus objects and its own status.
func (r *Reconciler) Reconcile(ctx context.Context, key rules.ObjectKey) error {
	r.metrics.Evaluations.WithLabelValues("object").Inc()
	eventAt, hadEvent := r.pending.take(key)
	in, err := r.inputs.Gather(ctx, key)
	if err != nil {
		if hadEvent {
			r.pending.Mark(key, eventAt)
		}
		return err
	}
	// Neither output waits for the other's writes: the status return runs beside the CombinedStatus
	// writes (in series, each added a write's latency to the other).
	wroteCS, csErr, wroteStatus, statusErr := sideBySide(
		func() (bool, error) { return r.combined.Sync(ctx, in) },
		func() (bool, error) { return r.returns.Write(ctx, in) })
	if err := errors.Join(csErr, statusErr); err != nil {
		return err
	}
	if in.Obj == nil && r.pacer != nil {
		r.pacer.Forget(key)
	}
	if hadEvent && (wroteCS || wroteStatus) {
		r.metrics.Latency.Observe(time.Since(eventAt).Seconds())
	}
	return nil
}

// sideBySide runs status (the status return) on a goroutine of its own beside combined (the
// CombinedStatus writes) and returns both results once both have ended. A panic of either is
// raised here, where the controller recovers it (that of status with its stack), and only once
// status has ended: no write of this evaluation outlives it, so the key's next evaluation, which
// the controller queues after the panic, never runs beside this one's status return.
func sideBySide(combined, status func() (bool, error)) (wroteCS bool, csErr error, wroteStatus bool, statusErr error) {
	var statusPanic any
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		defer func() {
			if p := recover(); p != nil {
				statusPanic = fmt.Sprintf("%v\n(in the status return)\n%s", p, debug.Stack())
			}
		}()
		wroteStatus, statusErr = status()
	}()
	func() {
		defer func() { <-returned }() // also when combined panics
		wroteCS, csErr = combined()
	}()
	if statusPanic != nil {
		panic(statusPanic)
	}
	return wroteCS, csErr, wroteStatus, statusErr
}

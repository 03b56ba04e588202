package aggregator

import (
	"context"
	"time"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=workstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=contentclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// objectReconciler is the statusfold_objects controller's reconciler: one evaluation of one
// workload object gathers its inputs once and hands them to the CombinedStatus writer and then
// to the status returner.
type objectReconciler struct {
	inputs   *gatherer
	combined *combinedStatusWriter
	returns  *statusReturner
	// pending is when the oldest WorkStatus event not yet acted on arrived, per object.
	pending *eventTimes
	metrics *metrics
	// pacer paces the object's writes (nil: not paced); it forgets an object that is gone.
	pacer *Pacer[ObjectKey]
}

// reconcile evaluates one workload object: its CombinedStatus objects and its own status.
func (r *objectReconciler) reconcile(ctx context.Context, key ObjectKey) error {
	r.metrics.evaluations.WithLabelValues("object").Inc()
	eventAt, hadEvent := r.pending.take(key)
	in, err := r.inputs.gather(ctx, key)
	if err != nil {
		if hadEvent {
			r.pending.mark(key, eventAt)
		}
		return err
	}
	wroteCS, err := r.combined.sync(ctx, in)
	if err != nil {
		return err
	}
	wroteStatus, err := r.returns.write(ctx, in)
	if err != nil {
		return err
	}
	if in.obj == nil && r.pacer != nil {
		r.pacer.Forget(key)
	}
	if hadEvent && (wroteCS || wroteStatus) {
		r.metrics.latency.Observe(time.Since(eventAt).Seconds())
	}
	return nil
}

package aggregator

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// Failures are visible at default verbosity (docs/controller.md, "Failures"): each one is counted
// in statusfold_errors_total, logged, and recorded as an Event on the object concerned. Logs and
// Events are rate-limited per (object, reason): a failure that repeats is reported again only
// after failureWindow, with the number of occurrences in between.

// failureWindow is the minimum time between two reports of the same failure of one object.
const failureWindow = time.Minute

// throttle decides which occurrences of a repeating failure are reported.
type throttle struct {
	mu     sync.Mutex
	window time.Duration
	m      map[string]*throttled
	sweeps int
}

type throttled struct {
	last       time.Time
	suppressed int
}

func newThrottle(window time.Duration) *throttle {
	return &throttle{window: window, m: map[string]*throttled{}}
}

// allow reports whether the occurrence of key at now is reported, and how many occurrences were
// suppressed since the previous report.
func (t *throttle) allow(key string, now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sweeps++; t.sweeps >= 1024 {
		t.sweeps = 0
		for k, e := range t.m {
			if now.Sub(e.last) > t.window {
				delete(t.m, k)
			}
		}
	}
	e := t.m[key]
	if e == nil {
		t.m[key] = &throttled{last: now}
		return true, 0
	}
	if now.Sub(e.last) < t.window {
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	return true, n
}

// objectRef is the Event target of a workload object known by key, or nil when its kind is not
// known (any more).
func (a *Aggregator) objectRef(key ObjectKey) *corev1.ObjectReference {
	info, ok := a.catalog.known(key.GroupResource())
	if !ok {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: info.GVR.GroupVersion().String(), Kind: info.Kind,
		Namespace: key.Namespace, Name: key.Name}
}

// refOf returns the Event target of a work item's key (nil: none).
func (a *Aggregator) refOf(key any) *corev1.ObjectReference {
	switch k := key.(type) {
	case ObjectKey:
		return a.objectRef(k)
	case string: // a BindingPolicy
		return &corev1.ObjectReference{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy", Name: k}
	case kindKey:
		gv := controlv1alpha1.GroupVersion
		if k.Kind == kindAggregationPolicy {
			gv = policyv1alpha1.GroupVersion
		}
		return &corev1.ObjectReference{APIVersion: gv.String(), Kind: k.Kind, Name: k.Name}
	}
	return nil
}

// failure reports a failure concerning the work item key (an ObjectKey, a BindingPolicy name or
// a kindKey): a log line and a Warning Event with the given reason, rate-limited. The caller
// counts it in the metrics.
func (a *Aggregator) failure(key any, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ok, suppressed := a.failures.allow(fmt.Sprintf("%v\x00%s", key, reason), time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		msg = fmt.Sprintf("%s (and %d more times since the last report)", msg, suppressed)
	}
	a.log.Info("failure", "reason", reason, "key", fmt.Sprint(key), "error", msg)
	if ref := a.refOf(key); ref != nil {
		a.recorder.Eventf(ref, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", truncate(msg, 1024))
	}
}

// reportDropped reports the status fields that the WDS's schema of the kind does not declare and
// that were therefore not written (once per write that left them out).
func (a *Aggregator) reportDropped(in *objectInputs, dropped []string) {
	a.metrics.dropped.WithLabelValues("schema").Add(float64(len(dropped)))
	msg := fmt.Sprintf("status written without fields that the WDS's schema of %s does not declare: %s",
		in.info.GVK().GroupKind(), strings.Join(dropped, ", "))
	a.log.Info("status fields dropped", "key", in.key.String(), "fields", dropped)
	a.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusFieldsDropped", "ReturnStatus", "%s", truncate(msg, 1024))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

package report

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// Failures are visible at default verbosity (docs/controller.md, "Failures"): each one is counted
// in statusfold_errors_total, logged, and recorded as an Event on the object concerned. Logs and
// Events are rate-limited per (object, reason): a failure that repeats is reported again only
// after failureWindow, with the number of occurrences in between.

// FailureWindow is the minimum time between two reports of the same failure of one object.
const FailureWindow = time.Minute

// Throttle decides which occurrences of a repeating failure are reported.
type Throttle struct {
	mu     sync.Mutex
	window time.Duration
	m      map[string]*throttled
	sweeps int
}

type throttled struct {
	last       time.Time
	suppressed int
}

func NewThrottle(window time.Duration) *Throttle {
	return &Throttle{window: window, m: map[string]*throttled{}}
}

// Allow reports whether the occurrence of key at now is reported, and how many occurrences were
// suppressed since the previous report.
func (t *Throttle) Allow(key string, now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A map swept every 1024 calls, as the work queues' (pacing): k8s.io/apimachinery's
	// cache.Expiring allocates per Set, and a failure report is on the path of every write error.
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

// Reporter reports failures (failure): logs and Events, rate-limited per object and reason.
type Reporter struct {
	Log      logr.Logger
	Recorder events.EventRecorder
	Failures *Throttle
	// Kinds finds the kind of a workload object's resource, for the Event's target.
	Kinds interface {
		Known(schema.GroupResource) (resources.ResourceInfo, bool)
	}
}

// objectRef is the Event target of a workload object known by key, or nil when its kind is not
// known (any more).
func (r *Reporter) objectRef(key rules.ObjectKey) *corev1.ObjectReference {
	info, ok := r.Kinds.Known(key.GroupResource())
	if !ok {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: info.GVR.GroupVersion().String(), Kind: info.Kind,
		Namespace: key.Namespace, Name: key.Name}
}

// refOf returns the Event target of a work item's key (nil: none).
func (r *Reporter) refOf(key any) *corev1.ObjectReference {
	switch k := key.(type) {
	case rules.ObjectKey:
		return r.objectRef(k)
	case string: // a BindingPolicy
		return &corev1.ObjectReference{APIVersion: controlv1alpha1.GroupVersion.String(), Kind: "BindingPolicy", Name: k}
	case rules.KindKey:
		gv := controlv1alpha1.GroupVersion
		if k.Kind == rules.KindAggregationPolicy {
			gv = policyv1alpha1.GroupVersion
		}
		return &corev1.ObjectReference{APIVersion: gv.String(), Kind: k.Kind, Name: k.Name}
	}
	return nil
}

// Failure reports a failure concerning the work item key (an ObjectKey, a BindingPolicy name or
// a kindKey): a log line and a Warning Event with the given reason, rate-limited. The caller
// counts it in the metrics.
func (r *Reporter) Failure(key any, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ok, suppressed := r.Failures.Allow(fmt.Sprintf("%v\x00%s", key, reason), time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		msg = fmt.Sprintf("%s (and %d more times since the last report)", msg, suppressed)
	}
	r.Log.Info("failure", "reason", reason, "key", fmt.Sprint(key), "error", msg)
	if ref := r.refOf(key); ref != nil {
		r.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", Truncate(msg, 1024))
	}
}

func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

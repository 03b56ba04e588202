package controllers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
)

// The reconciler's controllers, by name. The names are also their work queues' names, which
// dashboards, the chart's PrometheusRule and the metrics of controller-runtime
// (workqueue_*{name}, controller_runtime_reconcile_*{controller}) use.
const (
	// Objects reconciles workload objects (key rules.ObjectKey): their CombinedStatuses and
	// their own status.
	Objects = "statusfold_objects"
	// Policies resolves BindingPolicies (key: the policy's name).
	Policies = "statusfold_policies"
	// Kinds maintains the status of our own kinds (key rules.KindKey).
	Kinds = "statusfold_kinds"
)

// keyReconciler adapts a reconcile function of one key type to controller-runtime's
// reconcile.TypedReconciler. Every error is reported (ReportError: counted, logged and recorded
// as an Event, rate-limited) and returned, so the controller requeues the key with the rate
// limiter's backoff. A panic is reported as a panic (statusfold_errors_total{where="panic"},
// with its stack) and then re-raised for the controller, whose RecoverPanic turns it into an
// error: the key is requeued with backoff, controller_runtime_reconcile_panics_total counts it,
// and the process goes on serving the other keys.
type keyReconciler[K comparable] struct {
	do     func(context.Context, K) error
	report func(key K, err error, requeues int)
	queue  workqueue.TypedRateLimitingInterface[K]
}

var _ reconcile.TypedReconciler[string] = keyReconciler[string]{}

// Reconcile implements reconcile.TypedReconciler.
func (r keyReconciler[K]) Reconcile(ctx context.Context, key K) (reconcile.Result, error) {
	defer func() {
		if p := recover(); p != nil {
			r.report(key, recovered(p), r.queue.NumRequeues(key))
			panic(p)
		}
	}()
	if err := r.do(ctx, key); err != nil {
		r.report(key, err, r.queue.NumRequeues(key))
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// PanicError is a panic of one work item's reconcile, recovered for the report: the value and the
// stack where it was raised.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// recovered turns a panic of one work item's reconcile into an error (with its stack) for the
// report.
func recovered(p any) error {
	return &PanicError{Value: p, Stack: debug.Stack()}
}

// New builds one of the reconciler's typed controllers around its queue q (built
// before the controller, as the event handlers feed it; rl is q's rate limiter), watching the
// given sources: controller-runtime runs its workers, recovers panics, requeues
// failed keys with the queue's rate limiter, times out the sync of its sources (the manager's
// CacheSyncTimeout, default 2 min) and exports its reconcile metrics. It is leader-elected: only
// the leader reconciles.
//
// log receives the controller's own messages (start, stop, sources). Its per-key logger is
// discarded: reconcile errors are logged by report, rate-limited, instead of by controller-runtime
// at every retry.
func New[K comparable](name string, log logr.Logger, q workqueue.TypedRateLimitingInterface[K], rl workqueue.TypedRateLimiter[K], workers int,
	do func(context.Context, K) error, report func(K, error, int), sources ...source.TypedSource[K]) (controller.TypedController[K], error) {
	log = log.WithValues("controller", name)
	c, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[K]{
		LogConstructor: func(key *K) logr.Logger {
			if key != nil {
				return logr.Discard()
			}
			return log
		},
		Reconciler:              keyReconciler[K]{do: do, report: report, queue: q},
		MaxConcurrentReconciles: workers,
		RecoverPanic:            new(true),
		NeedLeaderElection:      new(true),
		RateLimiter:             rl,
		NewQueue: func(string, workqueue.TypedRateLimiter[K]) workqueue.TypedRateLimitingInterface[K] {
			return q
		},
		// Several managers in one process (tests, several WDSes) run controllers of the same
		// names: the names are fixed, as dashboards and alerts read them.
		SkipNameValidation: new(true),
	})
	if err != nil {
		return nil, err
	}
	for _, src := range sources {
		if err := c.Watch(src); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AtStart is a source that runs f once, when its controller starts (f queues the work to start
// with; it must not block).
func AtStart[K comparable](f func(context.Context)) source.TypedSource[K] {
	return source.TypedFunc[K](func(ctx context.Context, _ workqueue.TypedRateLimitingInterface[K]) error {
		f(ctx)
		return nil
	})
}

// EventSource is the source of the objects controller for statusfold's informer event handlers:
// Register connects them (fanout.Handlers.RegisterHandlers). They feed all three queues (which
// exist before the controllers start: the controllers' NewQueue hands them over), so the queue
// given to Start is not used. It is synced when every handler has been given its informer's
// initial list; then it calls AfterSync once, in a goroutine, with the time of the sync.
type EventSource[K comparable] struct {
	Register  func(ctx context.Context) ([]toolscache.ResourceEventHandlerRegistration, error)
	AfterSync func(ctx context.Context, synced time.Time)

	synced    []toolscache.ResourceEventHandlerRegistration
	ctx       context.Context // Start's: the controller's (WaitForSync's ends when it returns)
	firstPass sync.Once
}

var _ source.TypedSyncingSource[string] = &EventSource[string]{}

// Start registers the handlers; it does not wait for their initial lists.
func (s *EventSource[K]) Start(ctx context.Context, _ workqueue.TypedRateLimitingInterface[K]) error {
	synced, err := s.Register(ctx)
	s.synced, s.ctx = synced, ctx
	return err
}

// WaitForSync waits until every handler has had its informer's initial list (bounded by the
// controller's CacheSyncTimeout).
func (s *EventSource[K]) WaitForSync(ctx context.Context) error {
	if !resources.WaitSynced(ctx, s.synced...) {
		return errors.New("aggregator: event handlers did not sync")
	}
	s.firstPass.Do(func() { go s.AfterSync(s.ctx, time.Now()) })
	return nil
}

func (s *EventSource[K]) String() string { return "statusfold event handlers" }

// FirstPassPoll is how often AwaitFirstPass looks at the objects queue.
const FirstPassPoll = 100 * time.Millisecond

// AwaitFirstPass logs when the first pass is done — the start's sweep for labelled objects has
// queued them (swept closed; nil: no sweep), and then the objects queue q is empty for the first
// time after the handlers synced: every object the initial lists and the sweep queued has been
// evaluated — and calls after (aggregator.Options.AfterFirstPass; nil: none) then. Nothing happens
// if ctx ends first.
func AwaitFirstPass(ctx context.Context, synced time.Time, swept <-chan struct{}, q interface{ Len() int }, log logr.Logger, after func()) {
	if swept != nil {
		select {
		case <-ctx.Done():
			return
		case <-swept:
		}
	}
	t := time.NewTicker(FirstPassPoll)
	defer t.Stop()
	for q.Len() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	log.Info("first pass done: every object queued by the initial lists and the sweep for labelled objects evaluated", "afterSync", time.Since(synced).Round(time.Millisecond))
	if after != nil {
		after()
	}
}

// ReportError returns the report function of a controller's reconcile errors: counted in m,
// logged and recorded as an Event on the object by r (rate-limited), at default verbosity; a
// panic is also logged to log with its stack.
func ReportError[K comparable](m *metrics.Metrics, r *report.Reporter, log logr.Logger) func(K, error, int) {
	return func(key K, err error, requeues int) {
		where := "reconcile"
		if _, panicked := errors.AsType[*PanicError](err); panicked {
			where = "panic"
		}
		m.Errors.WithLabelValues(where).Inc()
		r.Failure(key, "ReconcileFailed", "%s (attempt %d; retrying with backoff)", firstLine(err.Error()), requeues+1)
		if where == "panic" {
			log.Error(err, "recovered from a panic in a reconcile; the key is retried with backoff", "key", fmt.Sprint(key))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

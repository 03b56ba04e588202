package aggregator

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
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// The reconciler's controllers, by name. The names are also their work queues' names, which
// dashboards, the chart's PrometheusRule and the metrics of controller-runtime
// (workqueue_*{name}, controller_runtime_reconcile_*{controller}) use.
const (
	// controllerObjects reconciles workload objects (key ObjectKey): their CombinedStatuses and
	// their own status.
	controllerObjects = "statusfold_objects"
	// controllerPolicies resolves BindingPolicies (key: the policy's name).
	controllerPolicies = "statusfold_policies"
	// controllerKinds maintains the status of our own kinds (key kindKey).
	controllerKinds = "statusfold_kinds"
)

// keyReconciler adapts a reconcile function of one key type to controller-runtime's
// reconcile.TypedReconciler. Every error is reported (reportError: counted, logged and recorded
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

// recovered turns a panic of one work item's reconcile into an error (with its stack) for the
// report.
func recovered(p any) error {
	return fmt.Errorf("panic: %v\n%s", p, debug.Stack())
}

// newController builds one of the reconciler's typed controllers around its queue q (built
// before the controller, as the event handlers feed it; rl is q's rate limiter), watching the
// given sources: controller-runtime runs its workers, recovers panics, requeues
// failed keys with the queue's rate limiter, times out the sync of its sources (the manager's
// CacheSyncTimeout, default 2 min) and exports its reconcile metrics. It is leader-elected: only
// the leader reconciles.
//
// log receives the controller's own messages (start, stop, sources). Its per-key logger is
// discarded: reconcile errors are logged by report, rate-limited, instead of by controller-runtime
// at every retry.
func newController[K comparable](name string, log logr.Logger, q workqueue.TypedRateLimitingInterface[K], rl workqueue.TypedRateLimiter[K], workers int,
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

// atStart is a source that runs f once, when its controller starts (f queues the work to start
// with; it must not block).
func atStart[K comparable](f func(context.Context)) source.TypedSource[K] {
	return source.TypedFunc[K](func(ctx context.Context, _ workqueue.TypedRateLimitingInterface[K]) error {
		f(ctx)
		return nil
	})
}

// addControllers adds the three controllers to mgr, each with the sources that start its work:
// the objects controller's eventSource connects every watched kind's informer to the queues (its
// workers start once the handlers have seen every informer's initial list, so the WEC index is
// complete), and it queues the objects that carry statusfold's labels; the policies and kinds
// controllers queue every policy and every object of our own kinds at start.
func (a *Aggregator) addControllers(mgr manager.Manager) error {
	objects, err := newController(controllerObjects, a.log, a.objects, a.objects.Limiter, a.opts.Workers, a.objectR.Reconcile, reportError[rules.ObjectKey](a),
		&eventSource{a: a}, atStart[rules.ObjectKey](func(ctx context.Context) {
			if a.pacer != nil {
				remove := a.metrics.AddPacer(a.pacer)
				context.AfterFunc(ctx, remove)
			}
			go a.enqueueLabelled(ctx)
			go a.refreshWhileDegraded(ctx)
		}))
	if err != nil {
		return err
	}
	policies, err := newController(controllerPolicies, a.log, a.policies, a.policies.Limiter, 1, a.policyR.Reconcile, reportError[string](a),
		atStart[string](a.enqueueAllPolicies))
	if err != nil {
		return err
	}
	kinds, err := newController(controllerKinds, a.log, a.kinds, a.kinds.Limiter, 1, a.kindsR.Reconcile, reportError[rules.KindKey](a),
		atStart[rules.KindKey](a.enqueueAllKinds))
	if err != nil {
		return err
	}
	for _, c := range []manager.Runnable{objects, policies, kinds} {
		if err := mgr.Add(c); err != nil {
			return err
		}
	}
	a.log.Info("controllers added", "workers", a.opts.Workers, "bindingResolution", a.opts.BindingResolution,
		"wdsName", a.opts.WDSName, "coalesceDelay", a.opts.CoalesceDelay, "maxWriteDelay", a.opts.MaxWriteDelay)
	return nil
}

// eventSource is the source of the objects controller for statusfold's informer event handlers
// (registerHandlers). They feed all three queues (which exist before the controllers start: the
// controllers' NewQueue hands them over), so the queue given to Start is not used. It is synced
// when every handler has been given its informer's initial list.
type eventSource struct {
	a         *Aggregator
	synced    []toolscache.ResourceEventHandlerRegistration
	ctx       context.Context // Start's: the controller's (WaitForSync's ends when it returns)
	firstPass sync.Once
}

var _ source.TypedSyncingSource[rules.ObjectKey] = &eventSource{}

// Start registers the handlers; it does not wait for their initial lists.
func (s *eventSource) Start(ctx context.Context, _ workqueue.TypedRateLimitingInterface[rules.ObjectKey]) error {
	synced, err := s.a.registerHandlers(ctx)
	s.synced, s.ctx = synced, ctx
	return err
}

// WaitForSync waits until every handler has had its informer's initial list (bounded by the
// controller's CacheSyncTimeout).
func (s *eventSource) WaitForSync(ctx context.Context) error {
	if !resources.WaitSynced(ctx, s.synced...) {
		return errors.New("aggregator: event handlers did not sync")
	}
	s.firstPass.Do(func() { go s.a.awaitFirstPass(s.ctx, time.Now()) })
	return nil
}

// firstPassPoll is how often awaitFirstPass looks at the objects queue.
const firstPassPoll = 100 * time.Millisecond

// awaitFirstPass logs when the first pass is done — the objects queue empty for the first time
// after the handlers synced: every object the initial lists queued has been evaluated — and calls
// Options.AfterFirstPass then. Nothing happens if ctx ends first.
func (a *Aggregator) awaitFirstPass(ctx context.Context, synced time.Time) {
	t := time.NewTicker(firstPassPoll)
	defer t.Stop()
	for a.objects.Len() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	a.log.Info("first pass done: every object queued by the initial lists evaluated", "afterSync", time.Since(synced).Round(time.Millisecond))
	if a.opts.AfterFirstPass != nil {
		a.opts.AfterFirstPass()
	}
}

func (s *eventSource) String() string { return "statusfold event handlers" }

// reportError returns the report function of a controller's reconcile errors: counted, logged
// and recorded as an Event on the object (rate-limited), at default verbosity.
func reportError[K comparable](a *Aggregator) func(K, error, int) {
	return func(key K, err error, requeues int) {
		where := "reconcile"
		if strings.HasPrefix(err.Error(), "panic: ") {
			where = "panic"
		}
		a.metrics.Errors.WithLabelValues(where).Inc()
		a.report.Failure(key, "ReconcileFailed", "%s (attempt %d; retrying with backoff)", firstLine(err.Error()), requeues+1)
		if where == "panic" {
			a.log.Error(err, "recovered from a panic in a reconcile; the key is retried with backoff", "key", fmt.Sprint(key))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

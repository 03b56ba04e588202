package luaconfig

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// Name is the controller's name.
const Name = "statusfold_luahealth"

// luaChecks is the aggregation engine as this controller uses it.
type luaChecks interface {
	SetLuaChecks(c *luahealth.Checks)
}

var _ luaChecks = (*aggregation.Engine)(nil)

// Reconciler installs the ConfigMap's checks in the engine.
type Reconciler struct {
	cache      client.Reader // holds the one ConfigMap
	key        types.NamespacedName
	builtin    *luahealth.Checks
	engine     luaChecks
	metrics    *metrics.Metrics
	recorder   events.EventRecorder
	log        logr.Logger
	reevaluate func(ctx context.Context)

	installed string // resourceVersion of the ConfigMap last installed ("" none: Argo CD's checks only)
}

// Config are a Reconciler's dependencies (see its fields of the same names).
type Config struct {
	Cache      client.Reader
	Key        types.NamespacedName
	Builtin    *luahealth.Checks
	Engine     luaChecks
	Metrics    *metrics.Metrics
	Recorder   events.EventRecorder
	Log        logr.Logger
	Reevaluate func(ctx context.Context)
}

// New returns the reconciler of c's dependencies.
func New(c Config) *Reconciler {
	return &Reconciler{cache: c.Cache, key: c.Key, builtin: c.Builtin, engine: c.Engine, metrics: c.Metrics,
		recorder: c.Recorder, log: c.Log.WithName("luahealth"), reevaluate: c.Reevaluate}
}

// Reconcile installs the checks of the ConfigMap as it is now: its entries in front of Argo CD's,
// or Argo CD's alone when it is gone. Entries that do not compile are reported and left out.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	err := r.cache.Get(ctx, r.key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		if r.installed != "" {
			r.log.Info("Lua health ConfigMap gone: Argo CD's checks only", "configMap", r.key)
			r.install(ctx, r.builtin, "")
		}
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	if cm.ResourceVersion == r.installed {
		return reconcile.Result{}, nil
	}
	checks, problems := r.builtin.WithConfigMap(cm.Data, luahealth.DefaultLimits())
	for _, p := range problems {
		r.metrics.Errors.WithLabelValues("lua-health").Inc()
		msg := fmt.Sprintf("Lua health check not used: %v; its kinds keep Argo CD's check or the built-in rules", p)
		r.log.Error(p.Err, "Lua health check not used; its kinds keep Argo CD's check or the built-in rules", "configMap", r.key, "key", p.Key)
		r.recorder.Eventf(&cm, nil, corev1.EventTypeWarning, "InvalidLuaHealthCheck", "Compile", "%s", msg)
	}
	r.log.Info("Lua health checks installed", "configMap", r.key, "entries", len(cm.Data), "problems", len(problems))
	r.install(ctx, checks, cm.ResourceVersion)
	return reconcile.Result{}, nil
}

func (r *Reconciler) install(ctx context.Context, c *luahealth.Checks, version string) {
	r.engine.SetLuaChecks(c)
	r.installed = version
	r.reevaluate(ctx)
}

// Add adds the controller and its cache (the one ConfigMap key, watched by name) to mgr.
func Add(mgr manager.Manager, r *Reconciler) error {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{r.key.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", r.key.Name)},
		},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	if r.cache == nil {
		r.cache = c
	}
	ctl, err := controller.New(Name, mgr, controller.Options{Reconciler: r, MaxConcurrentReconciles: 1, SkipNameValidation: ptrTrue()})
	if err != nil {
		return err
	}
	return ctl.Watch(source.Kind[*corev1.ConfigMap](c, &corev1.ConfigMap{}, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{}))
}

func ptrTrue() *bool { t := true; return &t }

// ScriptErrors returns the engine's handler of Lua check failures (aggregation.WithScriptErrors):
// each counts in statusfold_errors_total{where="lua-health"} and is logged, at most once per
// FailureWindow per check and kind, with the number of failures in between.
func ScriptErrors(m *metrics.Metrics, log logr.Logger, t *report.Throttle) func(gk schema.GroupKind, rule string, err error) {
	return func(gk schema.GroupKind, rule string, err error) {
		m.Errors.WithLabelValues("lua-health").Inc()
		if ok, suppressed := t.Allow("lua-health/"+rule+"/"+gk.String(), time.Now()); ok {
			log.Error(err, "Lua health check failed on a WEC's report: the WEC's health is Unknown", "kind", gk.String(), "rule", rule,
				"failuresSinceLastReport", suppressed)
		}
	}
}

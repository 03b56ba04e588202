package aggregation

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/luahealth"
)

//go:embed modules/*.rego
var builtinFS embed.FS

// Builtin names the embedded module of one kind.
type Builtin struct {
	GroupKind schema.GroupKind
	File      string // under modules/, e.g. "deployment.rego"
}

// Builtins lists the embedded modules, one per kind that Argo CD has a built-in health check for.
// Every other kind uses GenericModule.
var Builtins = []Builtin{
	{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "deployment.rego"},
	{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "statefulset.rego"},
	{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, "daemonset.rego"},
	{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "replicaset.rego"},
	{schema.GroupKind{Group: "batch", Kind: "Job"}, "job.rego"},
	{schema.GroupKind{Group: "", Kind: "Pod"}, "pod.rego"},
	{schema.GroupKind{Group: "", Kind: "PersistentVolumeClaim"}, "persistentvolumeclaim.rego"},
	{schema.GroupKind{Group: "", Kind: "Service"}, "service.rego"},
	{schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "ingress.rego"},
	{schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}, "apiservice.rego"},
	{schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, "horizontalpodautoscaler.rego"},
}

// GenericModule is the file of the module used for every kind without a module of its own.
const GenericModule = "generic.rego"

// BuiltinSources returns the embedded Rego files (modules and their tests) by file name.
func BuiltinSources() (map[string]string, error) {
	entries, err := builtinFS.ReadDir("modules")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := builtinFS.ReadFile(path.Join("modules", e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(b)
	}
	return out, nil
}

// Option configures an Engine.
type Option func(*Engine)

// WithTimeout bounds the evaluation of one object: every Rego query it runs, for all its WECs,
// shares one deadline (default 1s).
func WithTimeout(d time.Duration) Option { return func(e *Engine) { e.lim.timeout = d } }

// WithMaxOutputBytes bounds the size of a returned status, and of any rule's value, as JSON
// (default 1 MiB).
func WithMaxOutputBytes(n int) Option { return func(e *Engine) { e.lim.maxOutputBytes = n } }

// WithMaxBuiltinBytes bounds what the builtins of one object's evaluation may build in all
// (default 32 MiB; docs/security.md).
func WithMaxBuiltinBytes(n int64) Option { return func(e *Engine) { e.lim.maxBuiltinBytes = n } }

// WithMaxConcurrentEvaluations gives the engine its own limit of n Rego evaluations at once,
// instead of the process-wide one (2) that every engine and admission check shares by default.
func WithMaxConcurrentEvaluations(n int) Option {
	return func(e *Engine) { e.lim.slots = make(chan struct{}, max(n, 1)) }
}

// Engine picks and runs the aggregation module of a kind. It is safe for concurrent use.
type Engine struct {
	lim      limits
	builtins map[schema.GroupKind]*module
	generic  *module

	pool sync.Pool // States reused by Returned

	mu       sync.RWMutex
	policies map[string]*userPolicy // by AggregationPolicy name
	byKind   map[schema.GroupKind]*module
	inForce  map[schema.GroupKind]string // the name of the policy of byKind (inforce.go)

	// Lua health checks (lua.go), under mu: the kinds they judge, by kind (nil: no script).
	lua           *luahealth.Checks
	luaByKind     map[schema.GroupKind]*module
	onScriptError func(gk schema.GroupKind, rule string, err error) // WithScriptErrors
}

type userPolicy struct {
	gk  schema.GroupKind
	mod *module
}

// NewEngine compiles the built-in modules once.
func NewEngine(opts ...Option) (*Engine, error) {
	e := &Engine{
		lim:      defaultLimits(),
		builtins: map[schema.GroupKind]*module{},
		policies: map[string]*userPolicy{},
		byKind:   map[schema.GroupKind]*module{},
		inForce:  map[schema.GroupKind]string{},
	}
	for _, o := range opts {
		o(e)
	}
	srcs, err := BuiltinSources()
	if err != nil {
		return nil, err
	}
	compile := func(file string) (*module, error) {
		m, err := compileModule("builtin/"+file, srcs[file], e.lim, nil)
		if err != nil {
			return nil, fmt.Errorf("built-in module %s: %w", file, err)
		}
		return m, nil
	}
	for _, b := range Builtins {
		if e.builtins[b.GroupKind], err = compile(b.File); err != nil {
			return nil, err
		}
	}
	if e.generic, err = compile(GenericModule); err != nil {
		return nil, err
	}
	return e, nil
}

// moduleFor returns the module in force for gk: a valid user policy, else the kind's Lua health
// check (lua.go), else the built-in module, else the generic one.
func (e *Engine) moduleFor(gk schema.GroupKind) *module {
	e.mu.RLock()
	m := e.byKind[gk]
	e.mu.RUnlock()
	if m != nil {
		return m
	}
	if m := e.luaModuleFor(gk); m != nil {
		return m
	}
	if m := e.builtins[gk]; m != nil {
		return m
	}
	return e.generic
}

// SetPolicy installs a valid user policy, overriding the module of its target kind; an invalid
// one is rejected with its errors and the module in force stays. When several valid policies
// target one kind, the one with the smallest name is in force (PolicyStanding says which).
func (e *Engine) SetPolicy(p *policyv1alpha1.AggregationPolicy) field.ErrorList {
	mod, errs := validatePolicy(p, e.lim)
	if len(errs) > 0 {
		return errs
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.policies[p.Name] = &userPolicy{gk: targetGK(p), mod: mod}
	e.reindexLocked()
	return nil
}

// RemovePolicy drops the user policy of that name, if any.
func (e *Engine) RemovePolicy(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.policies, name)
	e.reindexLocked()
}

func (e *Engine) reindexLocked() {
	names := make([]string, 0, len(e.policies))
	for n := range e.policies {
		names = append(names, n)
	}
	sort.Strings(names)
	e.byKind = map[schema.GroupKind]*module{}
	e.inForce = map[schema.GroupKind]string{}
	for _, n := range names {
		p := e.policies[n]
		if _, taken := e.byKind[p.gk]; !taken {
			e.byKind[p.gk] = p.mod
			e.inForce[p.gk] = n
		}
	}
}

func targetGK(p *policyv1alpha1.AggregationPolicy) schema.GroupKind {
	return schema.GroupKind{Group: p.Spec.Target.Group, Kind: p.Spec.Target.Kind}
}

// WEC is one WEC's reported state of a workload object.
type WEC struct {
	Name    string
	Status  map[string]any                 // reported .status after ContentClassifier pruning; nil = reported nothing
	Details *controlv1alpha1.StatusDetails // from the WorkStatus; nil when unknown
}

// Returned computes what goes into the WDS object's .status: a copy (one WEC; observedGeneration
// per docs/rules.md "Status return") or an aggregate (several). obj is the WDS object (its metadata.generation matters)
// without .status. A nil result means "nothing to write" (no WEC, or none has reported).
func (e *Engine) Returned(gk schema.GroupKind, obj map[string]any, wecs []WEC) (map[string]any, error) {
	s, _ := e.pool.Get().(*State)
	if s == nil {
		s = e.NewState(gk)
	}
	s.gk = gk
	defer func() {
		s.reset()
		e.pool.Put(s)
	}()
	defer s.begin()() // one evaluation: the plan, every WEC's rank and the result
	s.SetObject(obj)
	s.load(wecs)
	return s.Result()
}

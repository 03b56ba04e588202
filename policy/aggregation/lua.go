package aggregation

import (
	"maps"

	"github.com/open-policy-agent/opa/v1/ast"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// The rule of the kinds Argo CD judges with a Lua health check (docs/aggregation.md "Lua health
// checks"): the whole status of the worst WEC by that check, first WEC by name on ties, with
// observedGeneration by the observedGeneration rule. The check runs once per change of a WEC's
// report, on the WDS object with that report (observedGeneration as the one-WEC copy has it), and
// its verdict is cached with the WEC.

// WithLuaChecks makes the engine judge kinds by these Lua health checks (nil: none).
func WithLuaChecks(c *luahealth.Checks) Option { return func(e *Engine) { e.lua = c } }

// WithScriptErrors has f called for every failure of a Lua check on a WEC's report (an error, a
// time-out, an exhausted budget; the WEC's verdict is then Unknown, as in Argo CD), with the
// kind and the rule ("lua/<source>/<key>"). f must be safe for concurrent use.
func WithScriptErrors(f func(gk schema.GroupKind, rule string, err error)) Option {
	return func(e *Engine) { e.onScriptError = f }
}

// SetLuaChecks replaces the engine's Lua health checks (nil: none), e.g. when the user's ConfigMap
// changes. States re-judge their WECs when the script of their kind changed.
func (e *Engine) SetLuaChecks(c *luahealth.Checks) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lua = c
	e.luaByKind = map[schema.GroupKind]*module{}
}

// luaModuleFor returns the module of a kind judged by a Lua check, or nil. Modules are made once
// per script (so a State sees a new module, and re-judges, when the kind's script changes).
func (e *Engine) luaModuleFor(gk schema.GroupKind) *module {
	e.mu.RLock()
	m, known := e.luaByKind[gk]
	c := e.lua
	e.mu.RUnlock()
	if known || c == nil {
		return m
	}
	if sc := c.For(gk); sc != nil {
		m = &module{name: "lua/" + sc.Source + "/" + sc.Key, script: sc, lim: e.lim}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lua == c {
		if e.luaByKind == nil {
			e.luaByKind = map[schema.GroupKind]*module{}
		}
		if prev, ok := e.luaByKind[gk]; ok {
			return prev
		}
		e.luaByKind[gk] = m
	}
	return m
}

// Health judges obj (a whole object of kind gk) as Argo CD does: by the kind's Lua check when it
// has one, else by Argo CD's built-in check in Go (policy/health). ok is false when neither
// judges the kind. A script's failure is an Unknown verdict with the error as message, as in
// Argo CD.
func (e *Engine) Health(gk schema.GroupKind, obj map[string]any) (r health.Result, ok bool) {
	e.mu.RLock()
	c := e.lua
	e.mu.RUnlock()
	r, ok, err := c.Health(gk, obj)
	if !ok {
		r, ok, err = health.Of(gk, obj)
	}
	if err != nil {
		return health.Result{Status: health.Unknown, Message: err.Error()}, ok
	}
	return r, ok
}

// Rule names what makes the aggregate of kind gk: "AggregationPolicy/<name>", "lua/<source>/<key>"
// (the worst WEC by that Lua check), "builtin/<file>" or "builtin/generic.rego".
func (e *Engine) Rule(gk schema.GroupKind) string {
	return e.moduleFor(gk).name
}

// JudgedObject is the object a WEC's verdict is computed on: the WDS object (without .status)
// with that WEC's status, its observedGeneration expressed in WDS generations as the one-WEC copy
// has it (gen if current, else gen−1). It shares values with obj and status.
func JudgedObject(obj, status map[string]any, gen int64, current bool) map[string]any {
	out := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if status != nil {
		st := maps.Clone(status)
		if _, has := st["observedGeneration"]; has {
			st["observedGeneration"] = returnedGeneration(gen, current)
		}
		out["status"] = st
	}
	return out
}

// verdictRank orders verdicts for "worst of": no verdict below Healthy, then Argo CD's order.
func verdictRank(s health.Status) float64 {
	if s == "" {
		return -1
	}
	return float64(s.Rank())
}

// judge computes w's verdict by the module's script and caches it with its rank.
func (s *State) judge(w *wecMeta) {
	r, err := s.mod.script.Run(JudgedObject(s.obj, w.Status, s.gen, w.current))
	if err != nil {
		r = health.Result{Status: health.Unknown, Message: err.Error()}
		if s.e.onScriptError != nil {
			s.e.onScriptError(s.gk, s.mod.name, err)
		}
	}
	w.verdict, w.rank, w.stale = r, verdictRank(r.Status), false
}

// luaResult is the aggregate of a Lua-judged kind: a copy of the worst reporting WEC's status
// (first by name on ties), observedGeneration by the rule over all WECs.
func (s *State) luaResult() map[string]any {
	worst, allCurrent := int32(-1), true
	for _, sl := range s.order {
		w := &s.meta[sl]
		allCurrent = allCurrent && w.current
		if w.Status == nil {
			continue // reported nothing: no verdict to keep; its lag shows in observedGeneration
		}
		if w.stale {
			s.judge(w)
		}
		if worst < 0 || w.rank > s.meta[worst].rank {
			worst = sl
		}
	}
	out := runtime.DeepCopyJSONValue(NormalizeNumbers(s.meta[worst].Status)).(map[string]any)
	if _, has := out["observedGeneration"]; has {
		out["observedGeneration"] = returnedGeneration(s.gen, allCurrent)
	}
	return out
}

// Verdicts returns each WEC's verdict by the kind's Lua check, in WEC-name order, judging those
// not yet judged; nil when the kind is not Lua-judged. A WEC that reported nothing has none.
func (s *State) Verdicts() []WECVerdict {
	s.sync()
	if s.mod.script == nil {
		return nil
	}
	out := make([]WECVerdict, 0, len(s.order))
	for _, sl := range s.order {
		w := &s.meta[sl]
		if w.Status != nil && w.stale {
			s.judge(w)
		}
		out = append(out, WECVerdict{Name: w.Name, Health: w.verdict})
	}
	return out
}

// WECVerdict is one WEC's verdict by its kind's health check.
type WECVerdict struct {
	Name   string
	Health health.Result
}

// healthDoc is a WEC's verdict as Rego modules see it (input.wec.health, input.wecs[i].health):
// by the kind's Lua check, else Argo CD's check in Go; nil when neither judges the kind.
func (s *State) healthDoc(w *wecMeta) map[string]any {
	r, ok := s.e.Health(s.gk, JudgedObject(s.obj, w.Status, s.gen, w.current))
	if !ok {
		return nil
	}
	return map[string]any{"status": string(r.Status), "message": r.Message}
}

// HealthCheck names what judges kind gk's health: "lua/<source>/<key>" for a Lua check, "go" for
// Argo CD's check in Go (policy/health), "" when Argo CD does not judge the kind.
func (e *Engine) HealthCheck(gk schema.GroupKind) string {
	e.mu.RLock()
	c := e.lua
	e.mu.RUnlock()
	if sc := c.For(gk); sc != nil {
		return "lua/" + sc.Source + "/" + sc.Key
	}
	if health.Has(gk) {
		return "go"
	}
	return ""
}

// readsHealth says whether a user module may read a WEC's verdict: one of its rules holds the
// string "health" (input.wec.health, w.health, object.get(w, "health", {}), …). Modules that do not
// are given no verdicts, so their WECs cost no health check.
func readsHealth(src string) bool {
	m, err := ast.ParseModuleWithOpts("", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return true
	}
	found := false
	for _, r := range m.Rules {
		ast.WalkTerms(r, func(t *ast.Term) bool {
			if s, ok := t.Value.(ast.String); ok && s == "health" {
				found = true
			}
			return found
		})
	}
	return found
}

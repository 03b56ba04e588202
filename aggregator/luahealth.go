package aggregator

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator/internal/luaconfig"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// luaConfigMapKey parses Options.LuaHealthConfigMap ("namespace/name"; empty: none).
func luaConfigMapKey(s string) (types.NamespacedName, error) {
	if s == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("aggregator: Lua health ConfigMap %q: want namespace/name", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// addLuaConfig adds the statusfold_luahealth controller when Options.LuaHealthConfigMap names a
// ConfigMap: its checks go in front of Argo CD's (lua), and every bound object is re-evaluated
// when they change.
func (p *parts) addLuaConfig(mgr manager.Manager, lua *luahealth.Checks, engine *aggregation.Engine) error {
	key, _ := luaConfigMapKey(p.opts.LuaHealthConfigMap) // checked by Options.defaults
	if key.Name == "" {
		return nil
	}
	r := luaconfig.New(luaconfig.Config{Key: key, Builtin: lua, Engine: engine, Metrics: p.metrics,
		Recorder: mgr.GetEventRecorder(rules.FieldManager), Log: p.log,
		Reevaluate: func(ctx context.Context) { p.handlers.EnqueueBoundOf(ctx, "", true) }})
	return luaconfig.Add(mgr, r)
}

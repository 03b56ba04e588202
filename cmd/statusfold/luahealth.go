package main

import (
	"fmt"
	"io"

	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// luaHealthFlagHelp is the help of --lua-health, shared by the commands that judge health.
const luaHealthFlagHelp = "a ConfigMap in argocd-cm's format (YAML or JSON file) whose resource.customizations.health.<group>_<kind> " +
	"entries are Lua health checks, before Argo CD's own (docs/aggregation.md, Lua health checks)"

// luaEngine returns an aggregation engine that judges kinds by Argo CD's Lua health checks and,
// given file, by the user's checks in that ConfigMap. An entry that does not compile is reported on
// warn and left out (the kind keeps Argo CD's check or the built-in rules), as in the manager.
func luaEngine(file string, warn io.Writer) (*aggregation.Engine, error) {
	checks, err := luahealth.Builtin()
	if err != nil {
		return nil, err
	}
	if file != "" {
		cm, err := loadDocument(file)
		if err != nil {
			return nil, err
		}
		data := map[string]string{}
		raw, _ := cm["data"].(map[string]any)
		for k, v := range raw {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s: data[%s] is not a string", file, k)
			}
			data[k] = s
		}
		var problems []luahealth.Problem
		checks, problems = checks.WithConfigMap(data, luahealth.DefaultLimits())
		for _, p := range problems {
			fmt.Fprintf(warn, "warning: %s: %v; the kind keeps Argo CD's check or the built-in rules\n", file, p)
		}
	}
	return aggregation.NewEngine(aggregation.WithLuaChecks(checks))
}

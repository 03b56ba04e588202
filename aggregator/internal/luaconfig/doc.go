// Package luaconfig is the statusfold_luahealth controller: it reads the user's ConfigMap of Lua
// health checks (argocd-cm's format, named by Options.LuaHealthConfigMap) from a cache that holds
// that one ConfigMap, gives the checks to the aggregation engine in front of Argo CD's, reports the
// entries that do not compile (log, Event on the ConfigMap, statusfold_errors_total{where="lua-health"})
// — their kinds keep Argo CD's check or the built-in rules — and re-evaluates every bound object
// when the checks change (docs/aggregation.md, "Lua health checks").
//
// ScriptErrors reports a check that fails on a WEC's report (statusfold_errors_total{where="lua-health"},
// a rate-limited log line); that WEC's health is then Unknown, as in Argo CD.
//
// It is layer 3 of the aggregator: it imports internal/metrics, internal/report and controller-runtime.
package luaconfig

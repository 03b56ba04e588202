// Package luahealth runs Argo CD's Lua health checks: the scripts Argo CD ships in its
// resource_customizations tree (taken from the argo-cd Go module statusfold depends on, not copied
// into this repository) and a team's own, given in argocd-cm's format
// (`resource.customizations.health.<group>_<kind>`). Each script is compiled once; every call runs it
// on a pooled Lua VM (gopher-lua) with the environment Argo CD gives health scripts — the object as
// the global `obj`, the base, table, string and math libraries and os.time/os.date — under a time
// bound and an instruction bound (docs/aggregation.md "Lua health checks").
//
// The package is pure: objects are plain JSON maps; it imports no Kubernetes client. The aggregation
// engine uses it to judge each WEC's reported state and to keep the worst verdict on the aggregate.
package luahealth

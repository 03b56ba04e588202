// Package collector is statusfold's StatusCollector engine: it compiles the CEL expressions of
// StatusCollector specs once, and evaluates them over the per-WEC reported state of one workload
// object to produce the `results` of a CombinedStatus (docs/rules.md "Collectors").
//
// It is a pure engine: it takes plain inputs (API types, decoded JSON) and returns plain results,
// and imports no Kubernetes client. The admission webhook, the controller and `statusfold eval`
// all use it.
//
//   - [Compiler] checks every shape rule and static rule of a StatusCollector and returns all
//     problems at once as a field.ErrorList, or a compiled [Collector]. A Compiler is safe for
//     concurrent use and caches compiled collectors by a hash of their name and spec.
//   - [Table] evaluates a set of collectors for one (workload object, BindingPolicy) pair,
//     incrementally: it caches each WEC's evaluation results, so a change of one WEC re-evaluates
//     only that WEC's expressions, and aggregates are updated from the cached per-row values.
//     A Table is not safe for concurrent use: the controller uses each from one goroutine at a time.
//   - [Evaluate] is the one-shot form.
package collector

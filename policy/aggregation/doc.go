// Package aggregation computes what statusfold writes into a workload object's own `.status` from
// the reported states of the WECs it runs in: a copy for one WEC, an aggregate for several.
//
// The rules are Rego modules, one per kind (built-in ones are embedded; users override them with
// AggregationPolicy objects), compiled once and run sandboxed: no network, no clock, no environment,
// bounded time and output size. "Rego decides, Go computes": a module declares in its `combine`
// rule, as data, how each status field combines across WECs (min, max, clamped sums, condition
// polarity, …); Go applies those combiners over cached per-WEC values, so a full aggregation over
// 1,000 WECs costs about as much as hand-written Go and a one-WEC change re-reads only that WEC.
// Optional rules: `wec_rank` (per WEC, cached per reported status) ranks WECs for "take the worst
// WEC's value" fields, and `finalize` rewrites the combined status. A module may instead define
// `status`, computing the whole aggregate in Rego from all WECs (simple, slower).
//
// The package is pure: it imports no Kubernetes client. docs/aggregation.md documents the input
// document, the module contract and each kind's rules.
package aggregation

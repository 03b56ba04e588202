// Package rules holds the reconciler's pure rules: which workload object a Binding entry, a
// WorkStatus or a CombinedStatus is about (ObjectKey, BoundObjects, WorkStatusObject,
// NewestWorkStatus, CombinedStatusObject), binding resolution (ResolveBinding, docs/rules.md
// "Bindings"), the status return decision (DecideReturn, docs/rules.md "Status return"), the
// labels and field manager statusfold writes under, and the predicates the event handlers use to
// decide which keys an event concerns (ChangedBound, OnlyReturnLabelsChanged, SelectorsName).
//
// It is layer 0 of the aggregator (see the aggregator package): it imports only the API types and
// apimachinery's pure packages — no client, no cache, no controller-runtime — and no other package
// of the aggregator.
package rules

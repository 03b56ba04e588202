// Package kinds is the statusfold_kinds controller's reconciler: the Reconciler maintains the
// status of statusfold's own kinds (StatusCollector, ContentClassifier, AggregationPolicy) — the
// problems the engines find in their specs and their Valid condition — and installs the
// AggregationPolicies in the aggregation engine (behind aggregationPolicies), saying on each
// whether it is the one in force for its kind (its InForce condition, inforce.go).
//
// It is layer 5 of the aggregator: it imports internal/rules, internal/metrics, internal/writer,
// the engines and controller-runtime's client.
package kinds

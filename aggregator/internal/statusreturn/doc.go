// Package statusreturn returns reported state into a workload object's own `.status`
// (docs/rules.md "Status return"): the Returner decides with rules.DecideReturn, copies or
// aggregates the qualified WECs' reports through the aggregation engine's incremental State of
// the object (behind aggregationStates), prunes the result to the WDS's schema of the kind, and
// writes it with the return labels, never taking fields over from other managers.
//
// It is layer 4 of the aggregator: it imports internal/rules, internal/inputs, internal/echo,
// internal/pacing, internal/metrics, internal/report, internal/writer and the aggregation engine.
package statusreturn

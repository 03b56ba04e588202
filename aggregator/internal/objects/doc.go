// Package objects is the statusfold_objects controller's reconciler: the Reconciler evaluates one
// workload object, gathering its inputs once (inputs.Gatherer) and handing them to the
// CombinedStatus writer (combined) and, at the same time, to the status returner (statusreturn).
// EventTimes remembers when the oldest WorkStatus event not yet acted on arrived, per object, for
// statusfold_workstatus_to_write_seconds.
//
// It is layer 5 of the aggregator: it imports internal/rules, internal/inputs, internal/combined,
// internal/statusreturn, internal/pacing and internal/metrics.
package objects

// Package combined keeps one CombinedStatus per (workload object, BindingPolicy) pair that
// references collectors (docs/rules.md "CombinedStatus"): the Writer feeds each pair's Table of
// the collector engine incrementally from an inputs.Object and applies the result, and deletes
// the CombinedStatuses of pairs that no longer exist.
//
// It is layer 4 of the aggregator: it imports internal/rules, internal/inputs, internal/index,
// internal/echo, internal/pacing, internal/metrics, internal/writer and the collector engine
// (behind collectorCompiler).
package combined

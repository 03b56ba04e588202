// Package controllers is the machinery of the reconciler's three controllers on
// controller-runtime's typed controller: New builds one around its coalescing queue, with panic
// recovery, rate-limited requeues and reconcile metrics; AtStart and EventSource are its sources;
// ReportError reports reconcile errors; AwaitFirstPass notices the end of the first pass.
//
// It is layer 3 of the aggregator: it imports internal/metrics, internal/report,
// internal/resources (WaitSynced) and controller-runtime.
package controllers

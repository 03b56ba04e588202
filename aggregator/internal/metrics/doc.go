// Package metrics defines statusfold's Prometheus metrics (docs/controller.md), registered once
// per process with controller-runtime's registry, including statusfold_write_delay_seconds, read
// from the running managers' Pacers.
//
// It is layer 2 of the aggregator: it imports internal/rules, internal/pacing and the Prometheus
// client.
package metrics

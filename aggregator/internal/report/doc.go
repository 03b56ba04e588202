// Package report reports failures at default verbosity (docs/controller.md, "Failures"): the
// Reporter logs each one and records it as an Event on the object concerned, rate-limited per
// (object, reason) by a Throttle.
//
// It is layer 2 of the aggregator: it imports internal/rules, internal/resources (the kind of a
// workload object's resource, for the Event's target) and client-go's events.
package report

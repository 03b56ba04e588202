// Package fanout maps the informers' events to work: the Handlers put the keys an event concerns
// on the controllers' queues — which they see only as Queue (Add, AddAfter) — keep the state the
// reconcilers read up to date (the WEC index, the report, pruner and destination caches, the echo
// memory of own writes, the pending event times), and queue work in bulk at start and for changes
// that concern many keys.
//
// It is layer 6 of the aggregator: it imports internal/rules, internal/index, internal/echo,
// internal/itscache, internal/resources, internal/inputs and internal/objects (the state it
// updates), and controller-runtime's cache and client.
package fanout

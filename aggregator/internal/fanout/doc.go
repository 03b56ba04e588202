// Package fanout maps the informers' events to work: the Handlers put the keys an event concerns
// on the controllers' queues — which they see only as Queue (Add, AddAfter) — keep the state the
// reconcilers read up to date (the WEC index, the report, pruner and destination caches, the echo
// memory of own writes, the pending event times), and queue work in bulk at start and for changes
// that concern many keys.
//
// The handlers are informer event handlers, not controller-runtime's source.Kind with
// handler.TypedEnqueueRequestsFromMapFunc per controller: one event updates that shared state
// before any key is queued (a WorkStatus event marks its WEC changed in the index that the
// evaluation it queues reads; an echo is decided against the write in flight), and one event feeds
// the queues of several controllers. Per-controller sources would each get their own handler, with
// no order between the state's update and the other controllers' queueing.
//
// It is layer 7 of the aggregator: it imports internal/rules, internal/index, internal/echo,
// internal/itscache, internal/resources, internal/inputs and internal/objects (the state it
// updates), and controller-runtime's cache and client.
package fanout

// Package inputs reads what one workload object's evaluation needs, once per evaluation: the
// Gatherer's Object holds the object, the Bindings that list it, its resource's
// ContentClassifier, and per WEC the WorkStatus, its decoded and pruned report and the inventory
// labels, looked up on first use. It also holds what its consumers (the CombinedStatus Tables,
// the returned-status States) share across evaluations: the caches of reports, pruners and
// destinations, FeedMark (which evaluation last brought a consumer up to date, so the next one
// feeds only the WECs that changed) and ObjectView; and whether the same object is returned under
// another resource (Gatherer.ReturnedElsewhere, alias.go).
//
// It is layer 3 of the aggregator: it imports internal/rules, internal/index, internal/resources,
// internal/itscache, internal/metrics, the engines' classifier, compactjson and objview, and
// controller-runtime's client.
package inputs

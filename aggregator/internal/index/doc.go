// Package index holds the field indexes the reconciler looks objects up by in the WDS cache —
// Bindings by the objects they list (BindingsListing), by the namespace/name of those objects
// (IndexBindingNames), by the StatusCollectors they name; CombinedStatuses by their object — and
// registers them with the manager (AddIndexes).
//
// It is a layer 1 mechanism of the aggregator: it imports internal/rules, the API types and
// controller-runtime's client and manager.
package index

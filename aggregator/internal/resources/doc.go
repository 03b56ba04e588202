// Package resources knows the WDS's workload resources: the Catalog (discovery of every
// listable, watchable resource, kept on failure: docs/controller.md "Failures") and the Watcher,
// which runs the informers of the resources that policies can select or Bindings list —
// cluster-wide, or only in the namespaces the policies name (docs/security.md "Reads") — and
// reads their objects through one view per resource (Watcher.Reader); Revocations notices when
// a running informer loses read access (docs/security.md "Read access revoked").
//
// It is a layer 1 mechanism of the aggregator: it imports the API types, client-go's discovery
// and controller-runtime's cache, no other package of the aggregator.
package resources

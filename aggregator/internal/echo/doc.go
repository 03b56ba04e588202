// Package echo recognizes the echoes of statusfold's own writes: OwnWrites remembers the
// resourceVersions its last writes gave each object, so that the watch event carrying one of
// them is dropped instead of causing another evaluation, and holds the events that arrive while a
// write is in flight until the write's answer decides them.
//
// It is a layer 1 mechanism of the aggregator: it imports internal/rules and libraries only.
package echo

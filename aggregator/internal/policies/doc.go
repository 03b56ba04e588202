// Package policies is the statusfold_policies controller's reconciler: the Reconciler resolves
// each BindingPolicy into its Binding (docs/rules.md "Bindings", rules.ResolveBinding) unless
// another controller writes them, maintains the StatusCollectorsAvailable condition on both, and
// starts and stops the watches of the workload resources that policies can select.
//
// It is layer 5 of the aggregator: it imports internal/rules, internal/resources, internal/echo,
// internal/metrics, internal/report, internal/writer and the collector engine (behind
// collectorCompiler).
package policies

// Package validation holds the pure shape checks of BindingPolicy objects: the rules that
// KubeStellar's schema has (each downsync clause names at least one object test), label selector
// syntax, and the syntax of names, groups, resources and namespaces. The admission webhook,
// `statusfold validate` and the controller (for objects that got in while the webhook was away)
// all call ValidateBindingPolicy; BindingPolicyWarnings lists what is legal but suspicious.
//
// Checks that need the cluster (do the named StatusCollectors exist, do their expressions fit the
// selected resources' schemas) live in package webhooks/check.
package validation

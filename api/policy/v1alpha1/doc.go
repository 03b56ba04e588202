// Package v1alpha1 holds statusfold's own policy API, group policy.statusfold.dev, version
// v1alpha1: AggregationPolicy, a user's Rego module that overrides (or adds) the rules that
// aggregate a kind's reported state from many WECs into the workload object's own `.status`.
//
// Import it as policyv1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=policy.statusfold.dev
package v1alpha1

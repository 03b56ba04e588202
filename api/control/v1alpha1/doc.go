// Package v1alpha1 holds the KubeStellar-compatible API of group control.kubestellar.io, version
// v1alpha1: BindingPolicy, Binding, StatusCollector, CombinedStatus, ContentClassifier and WorkStatus.
//
// Field names, JSON tags, scopes and short names follow KubeStellar 0.30 so that YAML written for
// KubeStellar applies unchanged. Where statusfold adds a field it only widens what is accepted;
// docs/api.md lists every such addition.
//
// +kubebuilder:object:generate=true
// +groupName=control.kubestellar.io
package v1alpha1

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "control.kubestellar.io", Version: "v1alpha1"}

// Resource names (lowercase plural) of this group's kinds.
const (
	ResourceBindingPolicies    = "bindingpolicies"
	ResourceBindings           = "bindings"
	ResourceStatusCollectors   = "statuscollectors"
	ResourceCombinedStatuses   = "combinedstatuses"
	ResourceContentClassifiers = "contentclassifiers"
	ResourceWorkStatuses       = "workstatuses"
)

// AddToScheme registers this package's kinds with s. It is called explicitly by whoever builds a
// scheme (no init-time registration).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&BindingPolicy{}, &BindingPolicyList{},
		&Binding{}, &BindingList{},
		&StatusCollector{}, &StatusCollectorList{},
		&CombinedStatus{}, &CombinedStatusList{},
		&ContentClassifier{}, &ContentClassifierList{},
		&WorkStatus{}, &WorkStatusList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "policy.statusfold.dev", Version: "v1alpha1"}

// ResourceAggregationPolicies is the resource name (lowercase plural) of AggregationPolicy.
const ResourceAggregationPolicies = "aggregationpolicies"

// AddToScheme registers this package's kinds with s. It is called explicitly by whoever builds a
// scheme (no init-time registration).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AggregationPolicy{}, &AggregationPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Binding is the resolution of the BindingPolicy of the same name: which objects go to which
// clusters, and with which modulation. statusfold writes Bindings itself unless it runs with
// `--binding-resolution=external`, in which case it reads those written by another controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={bdg}
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Binding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` lists the bound objects and the destinations.
	Spec BindingSpec `json:"spec,omitempty"`
	// `status` is written by the controllers.
	Status BindingStatus `json:"status,omitempty"`
}

// BindingSpec lists what objects go to which destinations. Every referenced object goes to every
// destination.
type BindingSpec struct {
	// `workload` lists the bound objects, grouped by scope, each with its combined modulation.
	// +optional
	Workload DownsyncObjectClauses `json:"workload,omitempty"`

	// `destinations` lists the clusters that the objects go to. No duplicates.
	// +optional
	// +listType=map
	// +listMapKey=clusterId
	Destinations []Destination `json:"destinations,omitempty"`
}

// DownsyncObjectClauses lists the bound objects, grouped by scope.
type DownsyncObjectClauses struct {
	// `clusterScope` lists cluster-scoped objects.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=name
	ClusterScope []ClusterScopeDownsyncClause `json:"clusterScope,omitempty"`

	// `namespaceScope` lists namespaced objects.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=namespace
	// +listMapKey=name
	NamespaceScope []NamespaceScopeDownsyncClause `json:"namespaceScope,omitempty"`
}

// NamespaceScopeDownsyncClause references one namespaced object and its combined modulation.
type NamespaceScopeDownsyncClause struct {
	NamespaceScopeDownsyncObject `json:",inline"`
	DownsyncModulation           `json:",inline"`
}

// NamespaceScopeDownsyncObject identifies one namespaced object by group, version, resource,
// namespace and name, with the resource version that was bound.
type NamespaceScopeDownsyncObject struct {
	metav1.GroupVersionResource `json:",inline"`
	// `namespace` of the object.
	Namespace string `json:"namespace"`
	// `name` of the object.
	Name string `json:"name"`
	// `resourceVersion` of the object when it was bound.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ClusterScopeDownsyncClause references one cluster-scoped object and its combined modulation.
type ClusterScopeDownsyncClause struct {
	ClusterScopeDownsyncObject `json:",inline"`
	DownsyncModulation         `json:",inline"`
}

// ClusterScopeDownsyncObject identifies one cluster-scoped object by group, version, resource and
// name, with the resource version that was bound.
type ClusterScopeDownsyncObject struct {
	metav1.GroupVersionResource `json:",inline"`
	// `name` of the object.
	Name string `json:"name"`
	// `resourceVersion` of the object when it was bound.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Destination identifies one WEC.
type Destination struct {
	// `clusterId` is the name of the WEC's inventory object (and of its mailbox namespace).
	ClusterId string `json:"clusterId"` //nolint:revive // KubeStellar's field name.
}

// BindingStatus is the observed state of a Binding.
type BindingStatus struct {
	// `conditions` describe the binding's state; statusfold maintains `StatusCollectorsAvailable`.
	// +optional
	Conditions []BindingPolicyCondition `json:"conditions,omitempty"`

	// `observedGeneration` is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// `errors` lists problems found while acting on the binding.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// BindingList is a list of Binding objects.
//
// +kubebuilder:object:root=true
type BindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Binding `json:"items"`
}

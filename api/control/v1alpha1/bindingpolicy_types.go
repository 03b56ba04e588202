package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingPolicy binds workload objects (what) to WECs (where), and says how each matching object's
// reported state comes back: which StatusCollectors apply, and whether the object's own `.status`
// gets a copy (one WEC) or an aggregate (several WECs).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={bp}
// +kubebuilder:printcolumn:name="COLLECTORS",type="string",JSONPath=".status.conditions[?(@.type=='StatusCollectorsAvailable')].status",description="Whether every referenced StatusCollector exists and is valid"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type BindingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` selects the clusters and the objects, and modulates the downsync and status return.
	Spec BindingPolicySpec `json:"spec,omitempty"`
	// `status` is written by the controllers.
	Status BindingPolicyStatus `json:"status,omitempty"`
}

// BindingPolicySpec selects clusters and workload objects.
type BindingPolicySpec struct {
	// `clusterSelectors` identifies the relevant inventory objects (OCM ManagedClusters) by their
	// labels. A cluster is selected when it matches any of these label selectors.
	// An empty list selects no cluster.
	// +optional
	ClusterSelectors []metav1.LabelSelector `json:"clusterSelectors,omitempty"`

	// `downsync` selects the objects to bind to the selected clusters, and modulates their downsync
	// and status return. An object is selected when it matches at least one clause. When several
	// clauses match one object, their boolean modulations are ORed and their `statusCollectors`
	// lists are unioned.
	// +optional
	Downsync []DownsyncPolicyClause `json:"downsync,omitempty"`
}

// DownsyncPolicyClause identifies some objects (by a predicate) and modulates how they are
// downsynced and how their reported state returns.
type DownsyncPolicyClause struct {
	DownsyncObjectTest `json:",inline"`
	DownsyncModulation `json:",inline"`
}

// DownsyncModulation says how matching objects are downsynced and how their reported state returns.
type DownsyncModulation struct {
	// `createOnly` indicates that in a given WEC, the object is not to be updated if it already
	// exists.
	// +optional
	CreateOnly bool `json:"createOnly,omitempty"`

	// `statusCollectors` names the StatusCollectors to apply to the matching objects. Each
	// (object, BindingPolicy) pair that references at least one collector gets a CombinedStatus
	// object holding one result per referenced, valid collector.
	// +optional
	StatusCollectors []string `json:"statusCollectors,omitempty"`

	// `wantSingletonReportedState` asks that, when the object goes to exactly one WEC (taking all
	// BindingPolicies into account), that WEC's reported state is copied into the object's own
	// `.status` in the WDS. While requested, the object carries the label
	// `kubestellar.io/executing-count` holding the number of qualified WECs.
	// +optional
	WantSingletonReportedState bool `json:"wantSingletonReportedState,omitempty"`

	// `wantMultiWECReportedState` asks that the object's own `.status` in the WDS reflects all the
	// qualified WECs: a copy when there is one, an aggregate (by the per-kind aggregation rules)
	// when there are several. It takes precedence over `wantSingletonReportedState`.
	// +optional
	WantMultiWECReportedState bool `json:"wantMultiWECReportedState,omitempty"`
}

// DownsyncObjectTest is a set of criteria that characterize matching objects. An object matches
// when every criterion is satisfied. At least one of the fields must be set.
type DownsyncObjectTest struct {
	// `apiGroup` is the API group of the matching objects, the empty string for the core API group.
	// Omitted (null) matches every API group.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// `resources` is a list of lowercase plural names for the sorts of objects to match.
	// An entry of `"*"` means that all match; an empty list also matches every object.
	// +optional
	Resources []string `json:"resources,omitempty"`

	// `namespaces` is a list of acceptable names for the object's namespace.
	// An entry of `"*"` means that any namespace is acceptable; this is the only way to match a
	// cluster-scoped object. An empty list matches every object.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// `namespaceSelectors` is a list of label selectors. For a namespaced object, at least one of
	// them has to match the labels of the object's Namespace. For a cluster-scoped object, at least
	// one of them must be `{}`. An empty list matches every object.
	// +optional
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`

	// `objectSelectors` is a list of label selectors; at least one of them must match the labels
	// of the object. An empty list matches every object.
	// +optional
	ObjectSelectors []metav1.LabelSelector `json:"objectSelectors,omitempty"`

	// `objectNames` is a list of object names that match. An entry of `"*"` means that all match;
	// an empty list matches every object.
	// +optional
	ObjectNames []string `json:"objectNames,omitempty"`
}

// BindingPolicyStatus is the observed state of a BindingPolicy.
type BindingPolicyStatus struct {
	// `conditions` describe the policy's state; statusfold maintains `StatusCollectorsAvailable`.
	// +optional
	Conditions []BindingPolicyCondition `json:"conditions,omitempty"`

	// `observedGeneration` is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// `errors` lists problems found in the spec.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// ConditionType names a condition of a BindingPolicy or Binding.
type ConditionType string

// Condition types maintained by statusfold.
const (
	// ConditionStatusCollectorsAvailable is True when every StatusCollector that the policy
	// references exists and is valid; otherwise False, with the missing and invalid ones named.
	ConditionStatusCollectorsAvailable ConditionType = "StatusCollectorsAvailable"
	// ConditionResourcesReadable is False when the policy's clauses select a resource that
	// statusfold does not read (Secrets not opted in, or a list its identity is forbidden),
	// with each resource named; it is removed when every selected resource is read again.
	ConditionResourcesReadable ConditionType = "ResourcesReadable"
)

// BindingPolicyCondition describes one aspect of the state of a BindingPolicy or Binding.
type BindingPolicyCondition struct {
	// `type` of the condition.
	Type ConditionType `json:"type"`
	// `status` of the condition: True, False or Unknown. (No enum in the schema: KubeStellar's
	// schema has none, and its controllers write these conditions too.)
	Status corev1.ConditionStatus `json:"status"`
	// `lastTransitionTime` is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// `reason` is a one-word CamelCase reason for the condition's status.
	// +optional
	Reason string `json:"reason,omitempty"`
	// `message` is a human-readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// BindingPolicyList is a list of BindingPolicy objects.
//
// +kubebuilder:object:root=true
type BindingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindingPolicy `json:"items"`
}

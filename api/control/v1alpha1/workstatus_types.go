package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WorkStatus carries one WEC's reported state of one workload object. The WEC-side agent writes
// it into the WEC's mailbox namespace (named after the WEC) in the ITS. The label
// `transport.kubestellar.io/originWdsName` names the WDS the object came from.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName={ws,wss}
// +kubebuilder:printcolumn:name="GROUP",type="string",JSONPath=".spec.sourceRef.group"
// +kubebuilder:printcolumn:name="RESOURCE",type="string",JSONPath=".spec.sourceRef.resource"
// +kubebuilder:printcolumn:name="NAMESPACE",type="string",JSONPath=".spec.sourceRef.namespace"
// +kubebuilder:printcolumn:name="NAME",type="string",JSONPath=".spec.sourceRef.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type WorkStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` identifies the workload object.
	Spec WorkStatusSpec `json:"spec,omitempty"`
	// `status` is a verbatim copy of the WEC object's `.status` (any JSON).
	Status RawStatus `json:"status,omitempty"`
	// `statusDetails` says which WDS generation last reached the WEC and whether it was applied.
	StatusDetails StatusDetails `json:"statusDetails,omitempty"`
}

// LabelOriginWDSName is the WorkStatus label naming the WDS its workload object came from.
const LabelOriginWDSName = "transport.kubestellar.io/originWdsName"

// WorkStatusSpec identifies the workload object.
type WorkStatusSpec struct {
	// `sourceRef` identifies the workload object in the WDS.
	// +optional
	SourceRef SourceRef `json:"sourceRef,omitempty"`
}

// SourceRef identifies a workload object.
type SourceRef struct {
	// `group` of the object, empty for the core group.
	Group string `json:"group"`
	// `version` of the object's API.
	// +optional
	Version string `json:"version,omitempty"`
	// `resource` (lowercase plural) of the object.
	// +optional
	Resource string `json:"resource,omitempty"`
	// `kind` of the object.
	// +optional
	Kind string `json:"kind,omitempty"`
	// `name` of the object.
	// +optional
	Name string `json:"name,omitempty"`
	// `namespace` of the object, empty when cluster-scoped.
	Namespace string `json:"namespace"`
}

// RawStatus is any JSON value: the WEC object's `.status`.
type RawStatus struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:",inline"`
}

// StatusDetails says how far the WDS object's generations have propagated to the WEC.
type StatusDetails struct {
	// `lastGeneration` is the last `metadata.generation` of the WDS object that propagated to the
	// WEC; it does not imply that it was applied there (see `lastGenerationIsApplied`). Zero means
	// none has propagated yet.
	// +optional
	LastGeneration int64 `json:"lastGeneration"`
	// `lastGenerationIsApplied` says whether `lastGeneration` was applied in the WEC.
	// +optional
	LastGenerationIsApplied bool `json:"lastGenerationIsApplied"`
	// `lastCurrencyUpdateTime` is when the core learned of the latest change to either field above.
	// +optional
	// +nullable
	LastCurrencyUpdateTime metav1.Time `json:"lastCurrencyUpdateTime"`
	// `wecGeneration` is the `metadata.generation` of the WEC's copy of the object when its status
	// was read. Upstream's agent does not write it; statusfold's tools (`wec-sim`) do. When known,
	// the returned `observedGeneration` equals the WDS generation only if the WEC's status has
	// observed this generation.
	// +optional
	WECGeneration *int64 `json:"wecGeneration,omitempty"`
}

// WorkStatusList is a list of WorkStatus objects.
//
// +kubebuilder:object:root=true
type WorkStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkStatus `json:"items"`
}

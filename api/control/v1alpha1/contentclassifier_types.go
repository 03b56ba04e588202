package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContentClassifier overrides the default classification of one resource's object content into
// desired state, reported state and state that does not propagate. Its name is exactly
// `resource.version.group` (`resource.version` for the core group), e.g. `jobs.v1.batch` or
// `pods.v1`. statusfold applies the `dontPropagatePointers` under `status`: those parts of the
// reported state are removed before collectors, status copy and aggregation see it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={cc}
// +kubebuilder:printcolumn:name="VALID",type="string",JSONPath=".status.conditions[?(@.type=='Valid')].status",description="Whether the classifier passed validation"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ContentClassifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` lists the overrides.
	Spec ContentClassifierSpec `json:"spec,omitempty"`
	// `status` reports invalid overrides.
	Status ContentClassifierStatus `json:"status,omitempty"`
}

// ContentClassifierSpec lists parts of the object, as parsed JSON pointers, that are desired state
// or that do not propagate. Nothing can be added to the reported state, no part of `.status` can be
// made desired state, and the empty pointer (the whole object) is invalid.
type ContentClassifierSpec struct {
	// `desiredStatePointers` lists parts of the object that are desired state.
	// +optional
	DesiredStatePointers []JSONPointer `json:"desiredStatePointers,omitempty"`

	// `dontPropagatePointers` lists parts of the object that do not propagate. Pointers under
	// `status` remove those parts of the reported state.
	// +optional
	DontPropagatePointers []JSONPointer `json:"dontPropagatePointers,omitempty"`
}

// JSONPointer is a parsed JSON pointer (RFC 6901): the list of its reference tokens, unescaped.
// For example `["status", "ready"]` is the pointer `/status/ready`.
type JSONPointer []string

// ContentClassifierStatus reports invalid overrides.
type ContentClassifierStatus struct {
	// `observedGeneration` is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// `errors` lists every invalid override, each naming its field path. Invalid overrides are
	// ignored; the valid ones still apply.
	// +optional
	Errors []string `json:"errors,omitempty"`

	// `conditions` holds `Valid`: True when the spec has no errors.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ContentClassifierList is a list of ContentClassifier objects.
//
// +kubebuilder:object:root=true
type ContentClassifierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContentClassifier `json:"items"`
}

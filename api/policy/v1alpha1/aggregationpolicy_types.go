package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// AggregationPolicy overrides, for one kind, the Rego rules that aggregate the reported state of
// many WECs into the workload object's own `.status`. The Rego module is compiled with the
// sandboxed capabilities, checked for the required rules, and its examples are run at admission;
// an invalid policy that got in anyway is ignored (the built-in module stays in force) and its
// problems are listed in `.status`. docs/aggregation.md describes the module contract.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={ap}
// +kubebuilder:printcolumn:name="GROUP",type="string",JSONPath=".spec.target.group"
// +kubebuilder:printcolumn:name="KIND",type="string",JSONPath=".spec.target.kind"
// +kubebuilder:printcolumn:name="VALID",type="string",JSONPath=".status.conditions[?(@.type==\"Valid\")].status"
// +kubebuilder:printcolumn:name="IN-FORCE",type="string",JSONPath=".status.conditions[?(@.type==\"InForce\")].status"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type AggregationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` holds the target kind, the Rego source and its examples.
	Spec AggregationPolicySpec `json:"spec"`
	// `status` says whether the policy is in force.
	// +optional
	Status AggregationPolicyStatus `json:"status,omitempty"`
}

// AggregationPolicySpec is the user's aggregation module for one kind.
type AggregationPolicySpec struct {
	// `target` is the group and kind whose aggregation this policy defines.
	Target TargetKind `json:"target"`
	// `rego` is the source of one Rego module (Rego v1 syntax). It must define the rule `combine`
	// (per-field combiners, as data) or the rule `status` (the whole aggregate computed in Rego);
	// see docs/aggregation.md.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=262144
	Rego string `json:"rego"`
	// `examples` are cases run at admission: each must produce exactly its `expectedStatus`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Examples []AggregationExample `json:"examples,omitempty"`
}

// TargetKind names a kind by API group and kind.
type TargetKind struct {
	// `group` is the API group, empty for the core group.
	// +optional
	Group string `json:"group"`
	// `kind` is the kind, e.g. `Deployment`.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// AggregationExample is one test case of an AggregationPolicy.
type AggregationExample struct {
	// `name` identifies the example in error messages.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// `object` is the workload object in the WDS (its `.status` is ignored).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Object runtime.RawExtension `json:"object"`
	// `wecs` are the WECs' reported states.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	WECs []ExampleWEC `json:"wecs"`
	// `expectedStatus` is the `.status` the policy must produce; omit it (or null) for "nothing".
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	ExpectedStatus *runtime.RawExtension `json:"expectedStatus,omitempty"`
}

// ExampleWEC is one WEC's reported state in an example.
type ExampleWEC struct {
	// `name` is the WEC name.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// `status` is the WEC's reported `.status`; omit it for a WEC that has reported nothing.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Status *runtime.RawExtension `json:"status,omitempty"`
	// `statusDetails` are the WorkStatus's details; omit them when unknown.
	// +optional
	StatusDetails *controlv1alpha1.StatusDetails `json:"statusDetails,omitempty"`
}

// ConditionInForce is the condition type saying whether a valid policy is the one in force for its
// kind: of several valid policies for one kind, the one with the smallest name is; the others are
// False with reason `Superseded`, naming it.
const ConditionInForce = "InForce"

// AggregationPolicyStatus says whether the policy is in force.
type AggregationPolicyStatus struct {
	// `observedGeneration` is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// `conditions`: `Valid` is True when the policy compiled, has its rules and passes its
	// examples, so it overrides the built-in module. `InForce` is True for the one valid policy in
	// force for its kind (of several, the smallest name) and False for the others (reason
	// `Superseded`, naming the one in force) and for an invalid one.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// `errors` lists the problems that keep the policy out of force, each with its field path and,
	// for Rego errors, line and column.
	// +optional
	// +listType=atomic
	Errors []string `json:"errors,omitempty"`
}

// AggregationPolicyList is a list of AggregationPolicy objects.
//
// +kubebuilder:object:root=true
type AggregationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AggregationPolicy `json:"items"`
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusCollector says how to combine the reported state of one workload object from the WECs it
// went to, modeled on an SQL SELECT: an optional filter (WHERE), then either a plain selection of
// named columns, or aggregation (COUNT, SUM, AVG, MIN, MAX) optionally grouped (GROUP BY), and a
// row limit (LIMIT). Expressions are CEL over `inventory`, `obj`, `returned` and `propagation`.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={sc}
// +kubebuilder:printcolumn:name="VALID",type="string",JSONPath=".status.conditions[?(@.type=='Valid')].status",description="Whether the collector compiled without errors"
// +kubebuilder:printcolumn:name="LIMIT",type="integer",JSONPath=".spec.limit"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type StatusCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `spec` is the collector's query.
	Spec StatusCollectorSpec `json:"spec,omitempty"`
	// `status` reports problems found in the spec.
	Status StatusCollectorStatus `json:"status,omitempty"`
}

// StatusCollectorSpec is an SQL-like query over the table that has one row per destination WEC.
// `select` and `combinedFields` are mutually exclusive and one of them is required; `groupBy`
// needs `combinedFields`.
type StatusCollectorSpec struct {
	// `filter`, if given, is applied first (like SQL's WHERE). It must evaluate to a boolean;
	// `null` counts as false. Rows where it is false are dropped.
	// +optional
	Filter *Expression `json:"filter,omitempty"`

	// `groupBy` says how to group rows for aggregation (like SQL's GROUP BY). Each entry is also an
	// output column, before the `combinedFields` columns. Requires `combinedFields`.
	// +optional
	GroupBy []NamedExpression `json:"groupBy,omitempty"`

	// `combinedFields` defines the aggregations: one output column each. Mutually exclusive with
	// `select`.
	// +optional
	CombinedFields []NamedAggregator `json:"combinedFields,omitempty"`

	// `select` defines named values to extract from each kept row: one output row per WEC, in WEC
	// name order. Mutually exclusive with `combinedFields`.
	// +optional
	Select []NamedExpression `json:"select,omitempty"`

	// `limit` is the maximum number of output rows. The default is 20.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	Limit int64 `json:"limit,omitempty"`
}

// Expression is a CEL expression over the variables `inventory` (name, labels), `obj` (the
// workload object in the WDS, without status), `returned` (status: the WEC's reported state) and
// `propagation` (lastReturnedUpdateTimestamp).
// +kubebuilder:validation:MaxLength=10000
type Expression string

// NamedExpression pairs a column name with a CEL expression.
type NamedExpression struct {
	// `name` of the output column: 1 to 253 characters, unique across the collector's columns.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// `def` is the CEL expression that computes the column's value.
	Def Expression `json:"def"`
}

// NamedAggregator pairs a column name with an aggregation.
type NamedAggregator struct {
	// `name` of the output column: 1 to 253 characters, unique across the collector's columns.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// `type` of aggregation. COUNT counts the group's rows and takes no subject. SUM, AVG, MIN and
	// MAX aggregate the numeric values of `subject` (int, uint, double, or a string holding a
	// decimal number); null subjects are skipped, as SQL skips NULL. With no values: SUM 0,
	// AVG NaN, MIN +Inf, MAX -Inf.
	Type AggregatorType `json:"type"`

	// `subject` is the CEL expression to aggregate. Required for SUM, AVG, MIN and MAX; must be
	// omitted for COUNT.
	// +optional
	Subject *Expression `json:"subject,omitempty"`
}

// AggregatorType is the kind of aggregation a NamedAggregator does.
// +kubebuilder:validation:Enum=COUNT;SUM;AVG;MIN;MAX
type AggregatorType string

// The aggregation types.
const (
	AggregatorTypeCount AggregatorType = "COUNT"
	AggregatorTypeSum   AggregatorType = "SUM"
	AggregatorTypeAvg   AggregatorType = "AVG"
	AggregatorTypeMin   AggregatorType = "MIN"
	AggregatorTypeMax   AggregatorType = "MAX"
)

// DefaultLimit is the row limit of a StatusCollector that does not set one.
const DefaultLimit int64 = 20

// StatusCollectorStatus reports problems found in a StatusCollector's spec.
type StatusCollectorStatus struct {
	// `observedGeneration` is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// `errors` lists every problem found in the spec, each naming its field path. A collector with
	// errors is not evaluated.
	// +optional
	Errors []string `json:"errors,omitempty"`

	// `conditions` holds `Valid`: True when the spec has no errors.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionValid is the condition type on StatusCollector and ContentClassifier that says whether
// the spec passed validation.
const ConditionValid = "Valid"

// StatusCollectorList is a list of StatusCollector objects.
//
// +kubebuilder:object:root=true
type StatusCollectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatusCollector `json:"items"`
}

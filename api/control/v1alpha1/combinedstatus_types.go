package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CombinedStatus holds the combined reported state of one workload object, from the WECs it went
// to, for one BindingPolicy: one result per StatusCollector that the policy applies to the object.
// Its name is `<object UID>.<BindingPolicy UID>`; its namespace is the object's, or
// `kubestellar-report` for a cluster-scoped object; its labels name the object and the policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName={cs}
// +kubebuilder:printcolumn:name="SUBJECT_GROUP",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/api-group']"
// +kubebuilder:printcolumn:name="SUBJECT_RESOURCE",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/resource']"
// +kubebuilder:printcolumn:name="SUBJECT_NS",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/namespace']"
// +kubebuilder:printcolumn:name="SUBJECT_NAME",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/name']"
// +kubebuilder:printcolumn:name="BINDINGPOLICY",type="string",JSONPath=".metadata.labels['status\\.kubestellar\\.io/binding-policy']"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type CombinedStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// `results` has one entry per referenced, valid StatusCollector, ordered by collector name.
	// +optional
	Results []NamedStatusCombination `json:"results,omitempty"`
}

// Labels on CombinedStatus objects that identify the workload object and the BindingPolicy.
const (
	LabelCombinedStatusAPIGroup      = "status.kubestellar.io/api-group"
	LabelCombinedStatusResource      = "status.kubestellar.io/resource"
	LabelCombinedStatusNamespace     = "status.kubestellar.io/namespace"
	LabelCombinedStatusName          = "status.kubestellar.io/name"
	LabelCombinedStatusBindingPolicy = "status.kubestellar.io/binding-policy"

	// ReportNamespace holds the CombinedStatus objects of cluster-scoped workload objects.
	ReportNamespace = "kubestellar-report"
)

// NamedStatusCombination is the result of one StatusCollector: a table.
type NamedStatusCombination struct {
	// `name` of the StatusCollector.
	Name string `json:"name"`

	// `columnNames` are the table's columns: the groupBy columns then the combinedFields columns,
	// or the select columns, each in spec order.
	ColumnNames []string `json:"columnNames"`

	// `rows` of the table, at most the collector's `limit`.
	// +optional
	Rows []StatusCombinationRow `json:"rows,omitempty"`

	// `rowErrors` lists per-WEC expression failures (at most 20, in WEC name order). A filter or
	// groupBy failure drops the WEC's row; a select failure makes the cell Null; a subject failure
	// leaves the WEC's row out of the aggregation input as a whole (COUNT does not count it either).
	// +optional
	RowErrors []RowEvaluationError `json:"rowErrors,omitempty"`

	// `aggregationErrors` lists subject values that SUM, AVG, MIN or MAX could not use (e.g. a
	// boolean or a non-numeric string): at most one entry per column and output row.
	// +optional
	AggregationErrors []ErrorInColumn `json:"aggregationErrors,omitempty"`
}

// StatusCombinationRow is one row of a result table.
type StatusCombinationRow struct {
	// `columns` holds one value per column name.
	Columns []Value `json:"columns"`
}

// RowEvaluationError records that an expression failed for one WEC.
type RowEvaluationError struct {
	// `wec` is the WEC whose row the error is about.
	WEC Destination `json:"wec"`
	// `columnName` is the column whose expression failed; empty for the filter.
	ColumnName string `json:"columnName"`
	// `error` is the evaluation error.
	Error string `json:"error"`
}

// FilterColumnName is the `columnName` of a row error in the filter expression.
const FilterColumnName = ""

// ErrorInColumn records subject values that an aggregation skipped. `columnName` and `error` are
// KubeStellar's; `row` and `count` are statusfold's additions.
type ErrorInColumn struct {
	// `columnName` is the aggregated column.
	ColumnName string `json:"columnName"`
	// `error` describes the first skipped value.
	Error string `json:"error"`
	// `row` is the index of the output row (group) the error is about.
	// +optional
	Row int32 `json:"row"`
	// `count` is how many values were skipped in that column and row.
	// +optional
	Count int32 `json:"count"`
}

// Value holds a JSON value. It is a union: `type` says which other field is set (none for Null).
type Value struct {
	// `type` of the value.
	Type ValueType `json:"type"`

	// `string` holds a String value.
	// +optional
	String *string `json:"string,omitempty"`

	// `float` holds a Number value as decimal text: an integer stays exact; a double is the
	// shortest decimal that reads back as the same double; or `NaN`, `+Inf`, `-Inf`.
	// +optional
	Number *string `json:"float,omitempty"`

	// `bool` holds a Bool value.
	// +optional
	Bool *bool `json:"bool,omitempty"`

	// `object` holds an Object value as plain JSON (numbers inside are plain JSON numbers).
	// +optional
	Object *apiextensionsv1.JSON `json:"object,omitempty"`

	// `array` holds an Array value as plain JSON.
	// +optional
	Array *apiextensionsv1.JSON `json:"array,omitempty"`
}

// ValueType is the type of a Value.
// +kubebuilder:validation:Enum=String;Number;Bool;Null;Object;Array
type ValueType string

// The value types.
const (
	TypeString ValueType = "String"
	TypeNumber ValueType = "Number"
	TypeBool   ValueType = "Bool"
	TypeNull   ValueType = "Null"
	TypeObject ValueType = "Object"
	TypeArray  ValueType = "Array"
)

// CombinedStatusList is a list of CombinedStatus objects.
//
// +kubebuilder:object:root=true
type CombinedStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CombinedStatus `json:"items"`
}

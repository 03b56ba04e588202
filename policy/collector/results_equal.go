package collector

import (
	"bytes"
	"reflect"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// ValuesEqual says whether two CombinedStatus values are equal as JSON values (2 and 2.0 are
// equal; an Object's key order does not matter). A controller compares what it would write with
// what the apiserver holds, which the apiserver has decoded and re-encoded as Kubernetes does
// (integers as int64, other numbers as float64): Object and Array cells are compared after the same
// decoding, so an integer beyond int64 inside them equals the double the apiserver keeps of it.
func ValuesEqual(a, b controlv1alpha1.Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case controlv1alpha1.TypeArray:
		return jsonCellsEqual(a.Array, b.Array)
	case controlv1alpha1.TypeObject:
		return jsonCellsEqual(a.Object, b.Object)
	}
	return reflect.DeepEqual(a, b)
}

func jsonCellsEqual(a, b *apiextensionsv1.JSON) bool {
	if a == nil || b == nil || bytes.Equal(a.Raw, b.Raw) {
		return (a == nil) == (b == nil)
	}
	var pa, pb any
	if utiljson.Unmarshal(a.Raw, &pa) != nil || utiljson.Unmarshal(b.Raw, &pb) != nil {
		return false
	}
	ja, erra := fromNative(pa, false)
	jb, errb := fromNative(pb, false)
	if erra != nil || errb != nil {
		return false
	}
	return string(appendKey(nil, &ja)) == string(appendKey(nil, &jb))
}

// ResultsEqual says whether two lists of results say the same: the same names, columns, row
// errors and aggregation errors, and cells equal as JSON values (ValuesEqual). A result in an
// earlier wire form (e.g. Objects of nested typed values) is never equal to the current one.
func ResultsEqual(a, b []controlv1alpha1.NamedStatusCombination) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ra, rb := &a[i], &b[i]
		if ra.Name != rb.Name || !slices.Equal(ra.ColumnNames, rb.ColumnNames) ||
			!slices.Equal(ra.RowErrors, rb.RowErrors) || !slices.Equal(ra.AggregationErrors, rb.AggregationErrors) ||
			len(ra.Rows) != len(rb.Rows) {
			return false
		}
		for j := range ra.Rows {
			if !slices.EqualFunc(ra.Rows[j].Columns, rb.Rows[j].Columns, ValuesEqual) {
				return false
			}
		}
	}
	return true
}

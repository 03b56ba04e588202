package kscompat

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// The comparison is KubeStellar v0.30.0's own statusCombinationEqual (pkg/status,
// combinedstatus-resolution.go, unexported, so copied here): same name, same column names in
// order, same number of rows, every row of one equal to some row of the other (rows unordered),
// values equal by type — numbers parsed as int64, then uint64, then float64 and equal only within
// the same kind; objects compared as decoded JSON. Two changes, both so that KubeStellar's own
// output compares equal to itself: NaN equals NaN (an AVG over no values is NaN on both sides) and
// Array values are compared like Object values (its valueEqual has no Array case and so calls two
// equal arrays different). Row errors and aggregation errors are not part of its equality; they
// are compared separately (errorsDiff).

func statusCombinationEqual(a, b *ksv1alpha1.NamedStatusCombination) bool {
	if a.Name != b.Name || !reflect.DeepEqual(a.ColumnNames, b.ColumnNames) || len(a.Rows) != len(b.Rows) {
		return false
	}
	for i := range a.Rows {
		found := false
		for j := range b.Rows {
			if rowEqual(&a.Rows[i], &b.Rows[j]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func rowEqual(a, b *ksv1alpha1.StatusCombinationRow) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		if !valueEqual(&a.Columns[i], &b.Columns[i]) {
			return false
		}
	}
	return true
}

func valueEqual(a, b *ksv1alpha1.Value) bool {
	if a.Type != b.Type || !validValue(a) || !validValue(b) {
		return false
	}
	switch a.Type {
	case ksv1alpha1.TypeString:
		return *a.String == *b.String
	case ksv1alpha1.TypeNumber:
		an, err1 := parseNumber(*a.Number)
		bn, err2 := parseNumber(*b.Number)
		return err1 == nil && err2 == nil && numericEqual(an, bn)
	case ksv1alpha1.TypeBool:
		return *a.Bool == *b.Bool
	case ksv1alpha1.TypeObject:
		return jsonEqual(a.Object.Raw, b.Object.Raw)
	case ksv1alpha1.TypeArray:
		return jsonEqual(a.Array.Raw, b.Array.Raw)
	case ksv1alpha1.TypeNull:
		return true
	}
	return false
}

func jsonEqual(a, b []byte) bool {
	var v1, v2 any
	_ = json.Unmarshal(a, &v1)
	_ = json.Unmarshal(b, &v2)
	return reflect.DeepEqual(v1, v2)
}

func validValue(v *ksv1alpha1.Value) bool {
	switch v.Type {
	case ksv1alpha1.TypeString:
		return v.String != nil
	case ksv1alpha1.TypeNumber:
		return v.Number != nil
	case ksv1alpha1.TypeBool:
		return v.Bool != nil
	case ksv1alpha1.TypeObject:
		return v.Object != nil
	case ksv1alpha1.TypeArray:
		return v.Array != nil
	case ksv1alpha1.TypeNull:
		return true
	}
	return false
}

func parseNumber(s string) (any, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	return nil, fmt.Errorf("not a number: %q", s)
}

func numericEqual(a, b any) bool {
	switch av := a.(type) {
	case int64:
		bv, ok := b.(int64)
		return ok && av == bv
	case uint64:
		bv, ok := b.(uint64)
		return ok && av == bv
	case float64:
		bv, ok := b.(float64)
		return ok && (av == bv || math.IsNaN(av) && math.IsNaN(bv))
	}
	return false
}

// errorsDiff describes how the row errors and aggregation errors of two results differ, by
// (WEC, column) and column only (the messages of two CEL implementations differ in wording), or
// returns "" when they name the same cells.
func errorsDiff(ks, sf *ksv1alpha1.NamedStatusCombination) string {
	rowKeys := func(r *ksv1alpha1.NamedStatusCombination) string {
		keys := []string{}
		for _, e := range r.RowErrors {
			keys = append(keys, e.WEC.ClusterId+"/"+e.ColumnName)
		}
		sort.Strings(keys)
		return strings.Join(keys, " ")
	}
	aggKeys := func(r *ksv1alpha1.NamedStatusCombination) string {
		keys := []string{}
		for _, e := range r.AggregationErrors {
			keys = append(keys, e.ColumnName)
		}
		sort.Strings(keys)
		return strings.Join(keys, " ")
	}
	var out []string
	if k, s := rowKeys(ks), rowKeys(sf); k != s {
		out = append(out, fmt.Sprintf("rowErrors KubeStellar [%s] statusfold [%s]", k, s))
	}
	if k, s := aggKeys(ks), aggKeys(sf); k != s {
		out = append(out, fmt.Sprintf("aggregationErrors KubeStellar [%s] statusfold [%s]", k, s))
	}
	return strings.Join(out, "; ")
}

// rowsText is a compact rendering of a result's rows for the test log.
func rowsText(r *ksv1alpha1.NamedStatusCombination) string {
	var rows []string
	for _, row := range r.Rows {
		var cells []string
		for _, v := range row.Columns {
			cells = append(cells, valueText(v))
		}
		rows = append(rows, "("+strings.Join(cells, ", ")+")")
	}
	return fmt.Sprintf("%v %s", r.ColumnNames, strings.Join(rows, " "))
}

func valueText(v ksv1alpha1.Value) string {
	switch {
	case v.String != nil:
		return fmt.Sprintf("%s:%q", v.Type, *v.String)
	case v.Number != nil:
		return string(v.Type) + ":" + *v.Number
	case v.Bool != nil:
		return fmt.Sprintf("%s:%t", v.Type, *v.Bool)
	case v.Object != nil:
		return string(v.Type) + ":" + canonicalJSON(v.Object.Raw)
	case v.Array != nil:
		return string(v.Type) + ":" + canonicalJSON(v.Array.Raw)
	}
	return string(v.Type)
}

// canonicalJSON re-encodes JSON with sorted keys, so texts compare regardless of key order.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// contentSignature renders a CombinedStatus's results with their rows sorted and the columns that
// have errors: equal signatures mean equal content regardless of row order.
func contentSignature(cs *ksv1alpha1.CombinedStatus) string {
	var b strings.Builder
	for i := range cs.Results {
		r := &cs.Results[i]
		rows := make([]string, len(r.Rows))
		for j, row := range r.Rows {
			var cells []string
			for _, v := range row.Columns {
				cells = append(cells, valueText(v))
			}
			rows[j] = strings.Join(cells, ",")
		}
		sort.Strings(rows)
		// KubeStellar keeps the first error per column of a Go map iteration, so which WEC an
		// error names changes from one write to the next: only the columns count here.
		cols := map[string]bool{}
		for _, e := range r.RowErrors {
			cols["row:"+e.ColumnName] = true
		}
		for _, e := range r.AggregationErrors {
			cols["agg:"+e.ColumnName] = true
		}
		errs := sortedKeys(cols)
		fmt.Fprintf(&b, "%s%v[%s]{%s};", r.Name, r.ColumnNames, strings.Join(rows, "|"), strings.Join(errs, "|"))
	}
	return b.String()
}

// representation normalises KubeStellar's result for the departures in how a value is written,
// which docs/rules.md "Wire format", "Collectors" decide differently (docs/kubestellar.md, "Departures"): a cell whose expression
// failed holds the error message as a String (statusfold: Null, and the message in rowErrors); a
// list is an Object holding a JSON array (statusfold: Array); a timestamp is an Object holding a
// JSON string (statusfold: a String); a null is an Object holding 0 (cel-go's NullValue marshalled
// as a number) and an unreported status an Object without content (statusfold: Null both).
// What remains after it is a difference in what is computed.
func representation(r *ksv1alpha1.NamedStatusCombination) *ksv1alpha1.NamedStatusCombination {
	out := r.DeepCopy()
	for i := range out.Rows {
		for j := range out.Rows[i].Columns {
			v := &out.Rows[i].Columns[j]
			switch {
			case v.Type == ksv1alpha1.TypeString && v.String != nil && strings.HasPrefix(*v.String, "failed to evaluate expression: "):
				*v = ksv1alpha1.Value{Type: ksv1alpha1.TypeNull}
			case v.Type == ksv1alpha1.TypeObject && (v.Object == nil || len(v.Object.Raw) == 0 || string(v.Object.Raw) == "null" || string(v.Object.Raw) == "0"):
				*v = ksv1alpha1.Value{Type: ksv1alpha1.TypeNull}
			case v.Type == ksv1alpha1.TypeObject && v.Object.Raw[0] == '[':
				*v = ksv1alpha1.Value{Type: ksv1alpha1.TypeArray, Array: v.Object}
			case v.Type == ksv1alpha1.TypeObject && v.Object.Raw[0] == '"':
				var str string
				if json.Unmarshal(v.Object.Raw, &str) == nil {
					*v = ksv1alpha1.Value{Type: ksv1alpha1.TypeString, String: &str}
				}
			}
		}
	}
	return out
}

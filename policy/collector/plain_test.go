package collector

import (
	"encoding/json"
	"testing"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func TestPlainValue(t *testing.T) {
	cases := []struct {
		v    controlv1alpha1.Value
		want string // JSON
	}{
		{vnull(), `null`},
		{vs("x"), `"x"`},
		{vb(false), `false`},
		{vn("123456789012345678901234567890"), `123456789012345678901234567890`},
		{vn("-1.5e-7"), `-1.5e-7`},
		{vn("NaN"), `"NaN"`},
		{vn("+Inf"), `"+Inf"`},
		{varr(`[1,{"a":null,"b":[]}]`), `[1,{"a":null,"b":[]}]`},
		{vobj(`{"big":123456789012345678901234567890,"x":1.5e-7}`), `{"big":123456789012345678901234567890,"x":1.5e-7}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(PlainValue(tc.v))
		if err != nil || string(b) != tc.want {
			t.Errorf("PlainValue(%+v) = %s (%v), want %s", tc.v, b, err, tc.want)
		}
	}
}

func TestValuesEqual(t *testing.T) {
	cases := []struct {
		a, b controlv1alpha1.Value
		want bool
	}{
		{vobj(`{"a":1,"b":[true,null]}`), vobj(`{ "b": [true, null], "a": 1 }`), true},
		{vobj(`{"a":2}`), vobj(`{"a":2.0}`), true},
		{varr(`["\u003c"]`), varr(`["<"]`), true},
		// The apiserver keeps an integer beyond int64 as the nearest double, and writes it so.
		{varr(`[18446744073709551615]`), varr(`[18446744073709552000]`), true},
		{varr(`[9223372036854775807]`), varr(`[9223372036854775806]`), false},
		{vobj(`{"a":1}`), vobj(`{"a":2}`), false},
		{vobj(`{"a":1}`), varr(`[1]`), false},
		// The earlier wire form: an Object of nested typed values.
		{vobj(`{"a":{"type":"Number","float":"1"}}`), vobj(`{"a":1}`), false},
		{vn("2"), vn("2"), true},
		{vn("2"), vn("2.0"), false}, // top-level numbers are compared as text: statusfold writes one form
		{vs("x"), vnull(), false},
	}
	for _, tc := range cases {
		if got := ValuesEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("ValuesEqual(%s, %s) = %v, want %v", valueJSON(t, tc.a), valueJSON(t, tc.b), got, tc.want)
		}
	}
}

func TestResultsEqual(t *testing.T) {
	base := func() []controlv1alpha1.NamedStatusCombination {
		return []controlv1alpha1.NamedStatusCombination{withErrors(result("c", []string{"s"}, row(vobj(`{"a":1}`))),
			rowErr("w", "s", "e"))}
	}
	if !ResultsEqual(base(), base()) {
		t.Error("equal results differ")
	}
	reencoded := base()
	reencoded[0].Rows[0].Columns[0] = vobj(`{ "a" : 1 }`)
	if !ResultsEqual(base(), reencoded) {
		t.Error("a re-encoded Object cell differs")
	}
	for name, change := range map[string]func(r *controlv1alpha1.NamedStatusCombination){
		"cell":          func(r *controlv1alpha1.NamedStatusCombination) { r.Rows[0].Columns[0] = vobj(`{"a":2}`) },
		"row error":     func(r *controlv1alpha1.NamedStatusCombination) { r.RowErrors[0].WEC.ClusterId = "v" },
		"no row errors": func(r *controlv1alpha1.NamedStatusCombination) { r.RowErrors = nil },
		"aggregation error": func(r *controlv1alpha1.NamedStatusCombination) {
			r.AggregationErrors = []controlv1alpha1.ErrorInColumn{{ColumnName: "s", Error: "e"}}
		},
		"columns": func(r *controlv1alpha1.NamedStatusCombination) { r.ColumnNames = []string{"t"} },
		"rows":    func(r *controlv1alpha1.NamedStatusCombination) { r.Rows = nil },
	} {
		changed := base()
		change(&changed[0])
		if ResultsEqual(base(), changed) {
			t.Errorf("a changed %s is equal", name)
		}
	}
}

// valueJSON is a value's JSON, for messages.
func valueJSON(t *testing.T, v controlv1alpha1.Value) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// valueCase is an expression with the value its select cell must hold, or the row error it must
// cause (the cell then Null).
type valueCase struct {
	expr    string
	want    controlv1alpha1.Value
	wantErr string
}

// valueCases cover how each kind of CEL value is written.
var valueCases = []valueCase{
	{expr: "'x'", want: vs("x")},
	{expr: "1", want: vn("1")},
	{expr: "-9223372036854775808", want: vn("-9223372036854775808")},
	{expr: "18446744073709551615u", want: vn("18446744073709551615")},
	{expr: "2.0", want: vn("2")},
	{expr: "0.5", want: vn("0.5")},
	{expr: "-0.0", want: vn("0")},
	{expr: "0.1 + 0.2", want: vn("0.30000000000000004")},
	{expr: "1e21", want: vn("1e+21")},
	{expr: "1e20", want: vn("100000000000000000000")},
	{expr: "0.000001", want: vn("0.000001")},
	{expr: "0.0000001", want: vn("1e-7")},
	{expr: "-1.5e-300", want: vn("-1.5e-300")},
	{expr: "double('NaN')", want: vn("NaN")},
	{expr: "double('Infinity')", want: vn("+Inf")},
	{expr: "-double('Infinity')", want: vn("-Inf")},
	{expr: "true", want: vb(true)},
	{expr: "null", want: vnull()},
	{expr: "[dyn(1), dyn('a'), dyn([null])]", want: varr(`[1,"a",[null]]`)},
	{expr: "[]", want: varr(`[]`)},
	{expr: "{'b': dyn(1), 'a': dyn({'c': false})}", want: vobj(`{"a":{"c":false},"b":1}`)},
	{expr: "timestamp('2024-01-02T03:04:05.5+01:00')", want: vs("2024-01-02T02:04:05.5Z")},
	{expr: "duration('90m')", want: vs("1h30m0s")},
	{expr: "optional.of(3)", want: vn("3")},
	{expr: "optional.none()", want: vnull()},
	{expr: "b'abc'", want: vs("YWJj")},
	{expr: "quantity('100m')", want: vs("100m")},
	{expr: "url('https://example.com/a?b=c')", want: vs("https://example.com/a?b=c")},
	{expr: "type(1)", want: vs("int")},
	{expr: "[dyn(timestamp('2024-01-02T03:04:05Z')), dyn(duration('1s')), dyn(b'\\x00')]", want: varr(`["2024-01-02T03:04:05Z","1s","AA=="]`)},
	// Inside a list or map, numbers are plain JSON numbers written as the float field's text.
	{expr: "[0.5, 2.0, 1e21, 0.0000001, -0.0, 1e20]", want: varr(`[0.5,2,1e+21,1e-7,0,100000000000000000000]`)},
	{expr: "{'i': dyn(-9223372036854775808), 'u': dyn(18446744073709551615u)}", want: vobj(`{"i":-9223372036854775808,"u":18446744073709551615}`)},
	// Strings are escaped as encoding/json (and so the apiserver) writes them.
	{expr: "['<a&b>', '\"q\"', 'é\\n']", want: varr(`["\u003ca\u0026b\u003e","\"q\"","é\n"]`)},
	{expr: "[1.0, double('NaN')]", wantErr: "a NaN or infinite number inside a list or map cannot be written as JSON"},
	{expr: "{'a': double('Infinity')}", wantErr: "a NaN or infinite number inside a list or map cannot be written as JSON"},
	{expr: "{1: 'a'}", wantErr: "a map key of type int cannot be a JSON object key"},
	{expr: "1 / 0", wantErr: "division by zero"},
}

func TestEvaluateValues(t *testing.T) {
	c := newTestCompiler(t)
	for _, tc := range valueCases {
		t.Run(tc.expr, func(t *testing.T) {
			col := mustCompile(t, c, statusCollector("c", withSelect("v", tc.expr)))
			got := Evaluate(nil, []WEC{wec("w")}, []*Collector{col})[0]
			want := result("c", []string{"v"}, row(tc.want))
			if tc.wantErr != "" {
				want = withErrors(result("c", []string{"v"}, row(vnull())), rowErr("w", "v", tc.wantErr))
			}
			if d := cmp.Diff(want, got, resultOpts); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

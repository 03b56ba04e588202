package collector

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzValueConversion: any decoded JSON converts to a Value that marshals; any double prints as
// text that reads back as the same double; numeric-string parsing never panics and accepts only
// what reads back as a number.
func FuzzValueConversion(f *testing.F) {
	for _, s := range []string{`null`, `{"a": [1, 2.5, "x", true, null, {}]}`, `1e400`, `-0`, `123456789012345678901234567890`,
		`"-2.5e3"`, `[[[[]]]]`, `{"":{"":""}}`} {
		f.Add([]byte(s), math.Float64bits(2.0))
	}
	f.Add([]byte(`0.1`), math.Float64bits(math.NaN()))
	f.Add([]byte(`"+007"`), math.Float64bits(1e21))
	f.Add([]byte(`"4."`), math.Float64bits(1e-7))
	f.Add([]byte(`" 4"`), math.Float64bits(math.Inf(-1)))
	f.Add([]byte(`"0x10"`), uint64(1)) // the smallest denormal
	f.Fuzz(func(t *testing.T, data []byte, bits uint64) {
		var v any
		if utiljson.Unmarshal(data, &v) == nil {
			jv, err := fromNative(v, false)
			if err != nil {
				t.Fatalf("decoded JSON %q did not convert: %v", data, err)
			}
			val := jv.toValue()
			if _, err := json.Marshal(val); err != nil {
				t.Fatalf("value of %q does not marshal: %v", data, err)
			}
			if _, err := json.Marshal(PlainValue(val)); err != nil {
				t.Fatalf("plain value of %q does not marshal: %v", data, err)
			}
			// An Object or Array cell is plain JSON that a Kubernetes client (integers as int64,
			// other numbers as float64) reads back as the same value.
			if cell := cmp.Or(val.Object, val.Array); cell != nil {
				var raw any
				if err := utiljson.Unmarshal(cell.Raw, &raw); err != nil {
					t.Fatalf("cell of %q is not JSON: %s: %v", data, cell.Raw, err)
				}
				if back, err := fromNative(raw, false); err != nil || compareValues(&jv, &back) != 0 {
					t.Fatalf("value of %q reads back from its cell %s as a different value (%v)", data, cell.Raw, err)
				}
			}
			if compareValues(&jv, &jv) != 0 {
				t.Fatalf("value of %q is not equal to itself", data)
			}
		}

		x := math.Float64frombits(bits)
		text := formatDouble(x)
		switch {
		case math.IsNaN(x):
			if text != "NaN" {
				t.Fatalf("NaN printed as %q", text)
			}
		case math.IsInf(x, 0):
			if text != "+Inf" && text != "-Inf" {
				t.Fatalf("%v printed as %q", x, text)
			}
		default:
			back, err := strconv.ParseFloat(text, 64)
			if err != nil || back != x {
				t.Fatalf("%v printed as %q, which reads back as %v (%v)", x, text, back, err)
			}
			if a := math.Abs(x); (a == 0 || (a >= 1e-6 && a < 1e21)) == strings.ContainsAny(text, "e") {
				t.Fatalf("%v printed as %q: wrong notation", x, text)
			}
		}

		if n, ok := parseNumericString(string(data)); ok {
			if _, err := strconv.ParseFloat(n.text(), 64); err != nil && !strings.Contains(err.Error(), "range") && n.rank() == 1 {
				t.Fatalf("numeric string %q became %q, not a number", data, n.text())
			}
			if strings.TrimSpace(string(data)) != string(data) || strings.ContainsAny(string(data), "xXnN") {
				t.Fatalf("%q should not count as a number", data)
			}
		}
	})
}

// FuzzEvaluate: collectors over arbitrary reported statuses never panic, produce results that
// marshal, and a Table updated WEC by WEC agrees with the one-shot evaluation.
func FuzzEvaluate(f *testing.F) {
	for _, s := range [][2]string{
		{`{"phase": "Running", "availableReplicas": 2}`, `{"phase": "Pending", "availableReplicas": 1.0}`},
		{`null`, `{"n": "4", "g": [1, {"a": null}], "ready": true}`},
		{`[]`, `"status"`},
		{`{"n": 1e308, "g": 2}`, `{"n": 1e308, "g": 2.0, "conditions": [{"type": "Ready", "status": "True"}]}`},
		{`{"n": 9223372036854775807}`, `{"n": 9223372036854775807, "ready": null}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), "eu")
	}
	c := newTestCompiler(f)
	cols := []*Collector{
		mustCompile(f, c, statusCollector("select", withFilter("returned.status.ready"), withSelect("status", "returned.status"),
			withSelect("wec", "inventory.name"), withSelect("t", "propagation.lastReturnedUpdateTimestamp"))),
		mustCompile(f, c, statusCollector("grouped", withGroupBy("g", "returned.status.g"), withGroupBy("r", "inventory.labels.region"),
			withCount("count"), withAgg("sum", sum, "returned.status.n"), withAgg("avg", avg, "returned.status.n"),
			withAgg("min", min_, "returned.status.n"), withAgg("max", max_, "returned.status.n"))),
		mustCompile(f, c, statusCollector("whole", withGroupBy("s", "returned.status"), withCount("count"))),
		mustCompile(f, c, statusCollector("conditions", withFilter("returned.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"),
			withCount("ready"))),
	}
	f.Fuzz(func(t *testing.T, s1, s2 []byte, region string) {
		var st1, st2 any
		if utiljson.Unmarshal(s1, &st1) != nil || utiljson.Unmarshal(s2, &st2) != nil {
			t.Skip()
		}
		wecs := []WEC{
			{Name: "a", Status: st1, Labels: map[string]string{"region": region}},
			{Name: "b", Status: st2, LastUpdate: &t0},
			{Name: "c", Status: st1},
			{Name: "d"},
		}
		want := Evaluate(map[string]any{"spec": st2}, wecs, cols)
		if _, err := json.Marshal(want); err != nil {
			t.Fatalf("results do not marshal: %v", err)
		}
		tbl := NewTable(map[string]any{"spec": st2}, cols)
		tbl.SetDestinations([]string{"d", "c", "b", "a"})
		for i := len(wecs) - 1; i >= 0; i-- {
			tbl.UpsertWEC(wecs[i])
		}
		if d := gocmp.Diff(want, tbl.Results(), resultOpts); d != "" {
			t.Fatalf("table differs from one-shot (-want +got):\n%s", d)
		}
	})
}

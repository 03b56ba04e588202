package collector

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAttributePath(t *testing.T) {
	cases := []struct {
		expr string
		want []string
	}{
		{"inventory.name", []string{"inventory", "name"}},
		{"inventory.labels['region']", []string{"inventory", "labels", "region"}},
		{"returned.status", []string{"returned", "status"}},
		{"returned.status.conditions", []string{"returned", "status", "conditions"}},
		{"returned.status['a-b'].c", []string{"returned", "status", "a-b", "c"}},
		{"obj.spec.replicas", []string{"obj", "spec", "replicas"}},
		{"obj", []string{"obj"}},
		{"propagation.lastReturnedUpdateTimestamp", []string{"propagation", "lastReturnedUpdateTimestamp"}},
		{"has(returned.status.x)", nil},
		{"returned.status.?x", nil},
		{"returned.status.items[0]", nil},
		{"returned.status[inventory.name]", nil},
		{"returned.status.x + 1", nil},
		{"inventory.labels.region.size()", nil},
		{"'a'", nil},
	}
	c := newTestCompiler(t)
	for _, tc := range cases {
		col := mustCompile(t, c, statusCollector("c", withSelect("v", tc.expr)))
		if d := cmp.Diff(tc.want, col.selects[0].prg.path); d != "" {
			t.Errorf("%s: path (-want +got):\n%s", tc.expr, d)
		}
	}
}

// TestPathReadMatchesCEL: reading a field path directly gives exactly what the CEL program gives,
// value or error, for every shape of input.
func TestPathReadMatchesCEL(t *testing.T) {
	exprs := []string{
		"inventory.name", "inventory.labels['region']", "inventory.labels.missing", "returned.status",
		"returned.status.n", "returned.status.m.k", "returned.status.m.k.deeper", "returned.status.list.k",
		"returned.status['a-b']", "propagation.lastReturnedUpdateTimestamp", "obj.spec.replicas", "obj.spec.none", "obj",
	}
	statuses := []string{`null`, `{}`, `{"n": 1, "m": {"k": "v"}, "list": [1], "a-b": 2.5}`, `{"n": null, "m": null}`,
		`{"n": [1, {"x": 1}], "m": {"k": {"deeper": true}}}`, `"scalar"`, `[1, 2]`}
	c := newTestCompiler(t)
	objs := []map[string]any{nil, {"spec": map[string]any{"replicas": int64(3)}}, {"spec": "x"}}
	for _, e := range exprs {
		checkAgainstCEL(t, c, e, func(x *expression) bool { return x.path != nil }, objs, statuses, func(st any) []WEC {
			return []WEC{wec("a", withStatus(st), withLabels("region", "eu"), withUpdated(t0)), wec("b", withStatus(st))}
		})
	}
}

// TestComparisonMatchesCEL: comparing a field path with a literal directly gives exactly what the
// CEL program gives, value or error, for every operator, literal type and shape of input; and
// expressions that are not such comparisons are not taken for one.
func TestComparisonMatchesCEL(t *testing.T) {
	var exprs []string
	for _, op := range []string{"==", "!=", "<", "<=", ">", ">="} {
		for _, lit := range []string{"0", "2", "-3", "'b'", "''"} {
			exprs = append(exprs, "returned.status.n "+op+" "+lit, lit+" "+op+" returned.status.n",
				"returned.status.m.k "+op+" "+lit)
		}
		exprs = append(exprs, "inventory.labels['region'] "+op+" 'eu'", "obj.spec.replicas "+op+" 3")
	}
	for _, op := range []string{"==", "!="} {
		exprs = append(exprs, "returned.status.n "+op+" true", "false "+op+" returned.status.m.k")
	}
	statuses := []string{`null`, `{}`, `{"n": 1, "m": {"k": "b"}}`, `{"n": 2, "m": {"k": "a"}}`, `{"n": -3, "m": {"k": ""}}`,
		`{"n": 2.0, "m": {"k": 2}}`, `{"n": "b", "m": {"k": true}}`, `{"n": true, "m": {"k": false}}`,
		`{"n": null, "m": null}`, `{"n": [1], "m": {"k": {"x": 1}}}`, `{"n": 9223372036854775807, "m": {"k": 1.5}}`,
		`{"n": 18446744073709551615}`, `"scalar"`}
	c := newTestCompiler(t)
	objs := []map[string]any{nil, {"spec": map[string]any{"replicas": int64(3)}}, {"spec": map[string]any{"replicas": 3.5}}}
	for _, e := range exprs {
		checkAgainstCEL(t, c, e, func(x *expression) bool { return x.cmp != nil }, objs, statuses, func(st any) []WEC {
			return []WEC{wec("a", withStatus(st), withLabels("region", "eu")),
				wec("b", withStatus(st), withLabels("region", "ap")), wec("c", withStatus(st))}
		})
	}
	for _, e := range []string{"returned.status.n < returned.status.m", "returned.status.n > 1.5", "returned.status.n == null",
		"returned.status.n < true", "returned.status.n + 1 > 2", "has(returned.status.n) == true", "returned.status.n in [1]",
		"returned.status.n == 1u", "returned.status.n > 0 && returned.status.n < 9"} {
		col := mustCompile(t, c, statusCollector("c", withSelect("v", e)))
		if col.selects[0].prg.cmp != nil {
			t.Errorf("%s: taken for a comparison %+v", e, *col.selects[0].prg.cmp)
		}
	}
}

// checkAgainstCEL compiles an expression, checks that its direct evaluation applies (recognised),
// evaluates it directly and with its CEL program only, for each workload object, status and the
// WECs made from it, and reports any difference in value or error.
func checkAgainstCEL(t *testing.T, c *Compiler, e string, recognised func(*expression) bool,
	objs []map[string]any, statuses []string, wecs func(any) []WEC) {
	t.Helper()
	fast := mustCompile(t, c, statusCollector("c", withSelect("v", e))).selects[0].prg
	if !recognised(fast) {
		t.Fatalf("%s: direct evaluation not recognised", e)
	}
	slow := &expression{prg: fast.prg}
	for _, obj := range objs {
		for _, st := range statuses {
			for _, w := range wecs(statusJSON(t, st)) {
				a := testActivation(&Table{obj: obj}, w)
				fv, ferr := fast.eval(a, nil)
				sv, serr := slow.eval(a, nil)
				if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
					t.Errorf("%s on %s: errors differ: direct %v, CEL %v", e, st, ferr, serr)
					continue
				}
				if ferr != nil {
					continue
				}
				fj, err1 := fromAny(fv)
				sj, err2 := fromAny(sv)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(fj, sj) {
					t.Errorf("%s on %s: direct gives %#v, CEL gives %#v", e, st, fv, sv)
				}
			}
		}
	}
}

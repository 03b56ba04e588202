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
		col := mustCompile(t, c, statusCollector("c", withSelect("v", e)))
		fast := col.selects[0].prg
		if fast.path == nil {
			t.Fatalf("%s: not recognised as a path", e)
		}
		slow := &expression{prg: fast.prg}
		for _, obj := range objs {
			tbl := &Table{obj: obj}
			for _, st := range statuses {
				for _, w := range []WEC{
					wec("a", withStatus(statusJSON(t, st)), withLabels("region", "eu"), withUpdated(t0)),
					wec("b", withStatus(statusJSON(t, st))),
				} {
					a := newActivation(tbl, w)
					fv, ferr := fast.eval(a, nil)
					sv, serr := slow.eval(a, nil)
					if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
						t.Errorf("%s on %s: errors differ: path %v, CEL %v", e, st, ferr, serr)
						continue
					}
					if ferr != nil {
						continue
					}
					fj, err1 := fromAny(fv)
					sj, err2 := fromAny(sv)
					if err1 != nil || err2 != nil || !reflect.DeepEqual(fj, sj) {
						t.Errorf("%s on %s: path gives %v, CEL gives %v", e, st, fv, sv)
					}
				}
			}
		}
	}
}

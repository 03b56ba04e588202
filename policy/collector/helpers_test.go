package collector

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// Builders for StatusCollectors, in the functional-options style.

type scOption func(*controlv1alpha1.StatusCollector)

func statusCollector(name string, opts ...scOption) *controlv1alpha1.StatusCollector {
	sc := &controlv1alpha1.StatusCollector{}
	sc.Name = name
	for _, o := range opts {
		o(sc)
	}
	return sc
}

func expr(s string) *controlv1alpha1.Expression {
	e := controlv1alpha1.Expression(s)
	return &e
}

func withFilter(e string) scOption {
	return func(sc *controlv1alpha1.StatusCollector) { sc.Spec.Filter = expr(e) }
}

func withSelect(name, def string) scOption {
	return func(sc *controlv1alpha1.StatusCollector) {
		sc.Spec.Select = append(sc.Spec.Select, controlv1alpha1.NamedExpression{Name: name, Def: controlv1alpha1.Expression(def)})
	}
}

func withGroupBy(name, def string) scOption {
	return func(sc *controlv1alpha1.StatusCollector) {
		sc.Spec.GroupBy = append(sc.Spec.GroupBy, controlv1alpha1.NamedExpression{Name: name, Def: controlv1alpha1.Expression(def)})
	}
}

// withAgg adds a combinedFields entry; subject "" means no subject.
func withAgg(name string, typ controlv1alpha1.AggregatorType, subject string) scOption {
	return func(sc *controlv1alpha1.StatusCollector) {
		na := controlv1alpha1.NamedAggregator{Name: name, Type: typ}
		if subject != "" {
			na.Subject = expr(subject)
		}
		sc.Spec.CombinedFields = append(sc.Spec.CombinedFields, na)
	}
}

func withCount(name string) scOption { return withAgg(name, controlv1alpha1.AggregatorTypeCount, "") }

func withLimit(n int64) scOption {
	return func(sc *controlv1alpha1.StatusCollector) { sc.Spec.Limit = n }
}

// Builders for values of the CombinedStatus union.

func vs(s string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeString, String: &s}
}

func vn(text string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeNumber, Number: &text}
}

func vb(b bool) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: &b}
}

func vnull() controlv1alpha1.Value { return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull} }

// varr and vobj build an Array and an Object from their JSON text as the engine writes it
// (docs/rules.md "Wire format": plain JSON): compact, object keys sorted.
func varr(raw string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeArray, Array: &apiextensionsv1.JSON{Raw: []byte(raw)}}
}

func vobj(raw string) controlv1alpha1.Value {
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: []byte(raw)}}
}

func row(cols ...controlv1alpha1.Value) controlv1alpha1.StatusCombinationRow {
	return controlv1alpha1.StatusCombinationRow{Columns: cols}
}

func rowErr(wec, column, msg string) controlv1alpha1.RowEvaluationError {
	return controlv1alpha1.RowEvaluationError{WEC: controlv1alpha1.Destination{ClusterId: wec}, ColumnName: column, Error: msg}
}

// Builders for WECs.

type wecOption func(*WEC)

func wec(name string, opts ...wecOption) WEC {
	w := WEC{Name: name}
	for _, o := range opts {
		o(&w)
	}
	return w
}

// statusJSON decodes JSON as Kubernetes does (integers as int64, other numbers as float64).
func statusJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := utiljson.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test status %s: %v", s, err)
	}
	return v
}

func withStatus(v any) wecOption { return func(w *WEC) { w.Status = v } }

func withLabels(kv ...string) wecOption {
	return func(w *WEC) {
		w.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			w.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withUpdated(ts time.Time) wecOption { return func(w *WEC) { w.LastUpdate = &ts } }

func mustCompile(t testing.TB, c *Compiler, sc *controlv1alpha1.StatusCollector) *Collector {
	t.Helper()
	col, errs, _ := c.Compile(sc)
	if len(errs) > 0 {
		t.Fatalf("compiling %s: %v", sc.Name, errs.ToAggregate())
	}
	return col
}

func newTestCompiler(t testing.TB) *Compiler {
	t.Helper()
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fieldErrorsDiff compares field errors by type, field path and bad value, and requires each
// actual detail to contain the expected detail.
func fieldErrorsDiff(want, got field.ErrorList) string {
	type key struct {
		Type  field.ErrorType
		Field string
	}
	keys := func(l field.ErrorList) []key {
		var out []key
		for _, e := range l {
			out = append(out, key{e.Type, e.Field})
		}
		return out
	}
	if d := cmp.Diff(keys(want), keys(got)); d != "" {
		return d + "\ngot: " + short(got.ToAggregate().Error())
	}
	for i := range want {
		if !strings.Contains(got[i].Detail, want[i].Detail) {
			return "error " + short(got[i].Error()) + " does not contain " + want[i].Detail
		}
	}
	return ""
}

var resultOpts = cmp.Options{cmpopts.EquateEmpty()}

// short keeps test failure messages readable when they quote long expressions.
func short(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// testActivation returns w's CEL variables in t, as a Table builds them for a row.
func testActivation(t *Table, w WEC) *activation {
	a := &activation{}
	a.init(t, w, compactjson.Expand(w.Status))
	return a
}

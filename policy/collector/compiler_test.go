package collector

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

const (
	count = controlv1alpha1.AggregatorTypeCount
	sum   = controlv1alpha1.AggregatorTypeSum
	avg   = controlv1alpha1.AggregatorTypeAvg
	min_  = controlv1alpha1.AggregatorTypeMin
	max_  = controlv1alpha1.AggregatorTypeMax
)

var (
	spec           = field.NewPath("spec")
	filterPath     = spec.Child("filter")
	metaName       = field.NewPath("metadata", "name")
	selectDef      = func(i int) *field.Path { return spec.Child("select").Index(i).Child("def") }
	groupByDef     = func(i int) *field.Path { return spec.Child("groupBy").Index(i).Child("def") }
	combinedField  = func(i int) *field.Path { return spec.Child("combinedFields").Index(i) }
	subjectPath    = func(i int) *field.Path { return combinedField(i).Child("subject") }
	longExpression = "'" + strings.Repeat("a", 9999) + "'" // 10,001 characters
)

// nestedComprehension nests depth `all` comprehensions over reported lists, e.g. for 2:
// returned.status.items.all(x0, x0.items.all(x1, x1 == 1)).
func nestedComprehension(depth int) string {
	e := fmt.Sprintf("x%d == 1", depth-1)
	for d := depth - 1; d >= 0; d-- {
		rng := "returned.status.items"
		if d > 0 {
			rng = fmt.Sprintf("x%d.items", d-1)
		}
		e = fmt.Sprintf("%s.all(x%d, %s)", rng, d, e)
	}
	return e
}

// compileValidCase is a StatusCollector that Compile accepts, with its expected warnings, columns
// and limit.
type compileValidCase struct {
	name         string
	sc           *controlv1alpha1.StatusCollector
	wantWarnings []string
	wantColumns  []string
	wantLimit    int64
}

func TestCompileValid(t *testing.T) {
	c := newTestCompiler(t)
	for _, tc := range compileValidCases() {
		t.Run(tc.name, func(t *testing.T) {
			col, errs, warnings := c.Compile(tc.sc)
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if d := cmp.Diff(tc.wantWarnings, warnings, resultOpts); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantColumns, col.ColumnNames()); d != "" {
				t.Errorf("columns (-want +got):\n%s", d)
			}
			if col.Limit() != tc.wantLimit || col.Name() != tc.sc.Name {
				t.Errorf("got name %q limit %d, want %q %d", col.Name(), col.Limit(), tc.sc.Name, tc.wantLimit)
			}
		})
	}
}

// compileValidCases are the StatusCollectors that TestCompileValid compiles.
func compileValidCases() []compileValidCase {
	return []compileValidCase{{
		name:        "count with default limit",
		sc:          statusCollector("count-wecs", withCount("count")),
		wantColumns: []string{"count"},
		wantLimit:   20,
	}, {
		name: "groupBy columns first, then combinedFields, in spec order",
		sc: statusCollector("c", withAgg("total", sum, "returned.status.n"), withGroupBy("region", "inventory.labels['region']"),
			withCount("n"), withGroupBy("phase", "returned.status.phase"), withLimit(3)),
		wantColumns: []string{"region", "phase", "total", "n"},
		wantLimit:   3,
	}, {
		name: "has() on the propagation timestamp, optionals, quantities, sets, lists, strings",
		sc: statusCollector("c",
			withFilter("has(propagation.lastReturnedUpdateTimestamp) && has(returned.status)"),
			withSelect("a", "returned.status.?replicas.orValue(0)"),
			withSelect("b", "quantity('100m').isLessThan(quantity('1'))"),
			withSelect("c", "sets.contains([1, 2, 3], [1])"),
			withSelect("d", "[3, 1, 2].sort()"),
			withSelect("e", "inventory.name.lowerAscii().split('-')"),
			withSelect("f", "propagation.lastReturnedUpdateTimestamp + duration('1h')"),
		),
		wantColumns: []string{"a", "b", "c", "d", "e", "f"},
		wantLimit:   20,
	}, {
		name:        "dyn and string subjects, dyn filter",
		sc:          statusCollector("c", withFilter("returned.status.ready"), withAgg("a", sum, "returned.status.n"), withAgg("b", max_, "inventory.labels['size']"), withAgg("c", avg, "1u"), withAgg("d", min_, "2.5")),
		wantColumns: []string{"a", "b", "c", "d"},
		wantLimit:   20,
	}, {
		name:        "a comprehension with string functions per element, and two nested comprehensions",
		sc:          statusCollector("c", withSelect("a", "returned.status.conditions.exists(c, c.message.contains('x') && c.reason.matches('^Min.*$'))"), withSelect("b", nestedComprehension(2))),
		wantColumns: []string{"a", "b"},
		wantLimit:   20,
	}, {
		name:         "constant false filter warns",
		sc:           statusCollector("c", withFilter("false"), withCount("n")),
		wantWarnings: []string{"spec.filter: is the constant false, so every row is dropped"},
		wantColumns:  []string{"n"},
		wantLimit:    20,
	}, {
		name:         "selecting the whole object warns",
		sc:           statusCollector("c", withSelect("o", "obj"), withSelect("s", "obj.spec")),
		wantWarnings: []string{"spec.select[0].def: selects the whole workload object, which the CombinedStatus then repeats for every WEC"},
		wantColumns:  []string{"o", "s"},
		wantLimit:    20,
	}, {
		name:        "expression of exactly 10,000 characters",
		sc:          statusCollector("c", withSelect("a", "'"+longExpression[2:])),
		wantColumns: []string{"a"},
		wantLimit:   20,
	}}
}

func TestCompileCache(t *testing.T) {
	c := newTestCompiler(t)
	a1 := mustCompile(t, c, statusCollector("a", withCount("n")))
	a2 := mustCompile(t, c, statusCollector("a", withCount("n")))
	b := mustCompile(t, c, statusCollector("a", withCount("m")))
	other := mustCompile(t, c, statusCollector("b", withCount("n")))
	if a1 != a2 {
		t.Errorf("the same spec compiled twice gave two collectors")
	}
	if a1 == b || a1 == other {
		t.Errorf("different specs share a compiled collector")
	}
}

// TestCompileCacheKeepsCollectorsInUse: more distinct collectors than the cache holds pass
// through it while one collector keeps being used; that one stays compiled (the same
// *Collector, so the Tables that use it keep their rows).
func TestCompileCacheKeepsCollectorsInUse(t *testing.T) {
	c := newTestCompiler(t)
	inUse := statusCollector("in-use", withCount("n"))
	first := mustCompile(t, c, inUse)
	for i := range cacheSize + cacheSize/2 {
		mustCompile(t, c, statusCollector(fmt.Sprintf("passing-%d", i), withCount("n")))
		if i%100 == 0 {
			if got := mustCompile(t, c, inUse); got != first {
				t.Fatalf("after %d other collectors, the collector in use was compiled again", i+1)
			}
		}
	}
	if got := mustCompile(t, c, inUse); got != first {
		t.Errorf("the collector in use was compiled again")
	}
	if c.cache.Len() > cacheSize {
		t.Errorf("cache holds %d entries, more than %d", c.cache.Len(), cacheSize)
	}
}

func TestCompileConcurrent(t *testing.T) {
	c := newTestCompiler(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := statusCollector("c", withGroupBy("g", "returned.status.phase"), withAgg("s", sum, "returned.status.n"), withLimit(int64(i%3+1)))
			col, errs, _ := c.Compile(sc)
			if len(errs) > 0 || col.Limit() != int64(i%3+1) {
				t.Errorf("concurrent compile: %v, limit %d", errs, col.Limit())
			}
		}()
	}
	wg.Wait()
}

func TestWithTypes(t *testing.T) {
	fields := func(kv ...any) map[string]*apiservercel.DeclField {
		m := map[string]*apiservercel.DeclField{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = apiservercel.NewDeclField(kv[i].(string), kv[i+1].(*apiservercel.DeclType), false, nil, nil)
		}
		return m
	}
	objType := apiservercel.NewObjectType("object", fields("spec", apiservercel.NewObjectType("object", fields("replicas", apiservercel.IntType))))
	statusType := apiservercel.NewObjectType("object", fields("availableReplicas", apiservercel.IntType, "phase", apiservercel.StringType))
	c, err := NewCompiler(WithTypes(objType, statusType))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		sc   *controlv1alpha1.StatusCollector
		want field.ErrorList
	}{{
		name: "typed fields compile",
		sc:   statusCollector("c", withFilter("obj.spec.replicas != returned.status.availableReplicas"), withSelect("p", "returned.status.phase")),
	}, {
		name: "misspelt typed fields fail",
		sc:   statusCollector("c", withSelect("a", "obj.spec.replcas"), withSelect("b", "returned.status.availableReplica")),
		want: field.ErrorList{
			field.Invalid(selectDef(0), "", "undefined field 'replcas'"),
			field.Invalid(selectDef(1), "", "undefined field 'availableReplica'"),
		},
	}, {
		name: "typed filter of non-bool type",
		sc:   statusCollector("c", withFilter("returned.status.phase"), withCount("n")),
		want: field.ErrorList{field.Invalid(filterPath, "", "its type is string")},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, _ := c.Compile(tc.sc)
			if d := fieldErrorsDiff(tc.want, errs); d != "" {
				t.Errorf("field errors (-want +got):\n%s", d)
			}
		})
	}
}

// TestNewAndStoredExpressions: a library that this Kubernetes version introduced (the lists
// library's `includes`, 1.37) is not available to new expressions (admission), which must
// compile on the previous version too, but is to stored ones (the controller), which must keep
// working whatever admitted them. Older libraries are in both.
func TestNewAndStoredExpressions(t *testing.T) {
	stored := newTestCompiler(t)
	admission, err := NewCompiler(WithNewExpressions())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, expr          string
		wantNew, wantStored bool // compiles
	}{
		{"library of this version", "[1, 2].includes(1)", false, true},
		{"library of an earlier version", "[1, 2].indexOf(2)", true, true},
		{"no library", "inventory.name", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := statusCollector("c", withSelect("v", tc.expr))
			for _, c := range []struct {
				name string
				comp *Compiler
				want bool
			}{{"new", admission, tc.wantNew}, {"stored", stored, tc.wantStored}} {
				_, errs, _ := c.comp.Compile(sc)
				if got := len(errs) == 0; got != c.want {
					t.Errorf("%s expressions: %q compiles = %v, want %v (%v)", c.name, tc.expr, got, c.want, errs)
				}
			}
		})
	}
}

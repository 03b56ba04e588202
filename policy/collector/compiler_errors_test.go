package collector

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// compileErrorCase is a StatusCollector that Compile rejects, with the field errors it must
// report (see fieldErrorsDiff).
type compileErrorCase struct {
	name string
	sc   *controlv1alpha1.StatusCollector
	want field.ErrorList
}

func TestCompileErrors(t *testing.T) {
	cases := slices.Concat(shapeErrorCases(), expressionErrorCases(), typeErrorCases(), sizeErrorCases(), everyErrorCases())
	c := newTestCompiler(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col, errs, _ := c.Compile(tc.sc)
			if d := fieldErrorsDiff(tc.want, errs); d != "" {
				t.Errorf("field errors (-want +got):\n%s", d)
			}
			if col != nil {
				t.Errorf("got a collector despite errors")
			}
		})
	}
}

// shapeErrorCases break the shape rules, the column name rules, the limit or metadata.name.
func shapeErrorCases() []compileErrorCase {
	return []compileErrorCase{{
		name: "select and combinedFields are mutually exclusive",
		sc:   statusCollector("c", withSelect("a", "1"), withCount("n")),
		want: field.ErrorList{field.Forbidden(spec.Child("select"), "mutually exclusive")},
	}, {
		name: "one of select or combinedFields is required",
		sc:   statusCollector("c", withFilter("true")),
		want: field.ErrorList{field.Required(spec.Child("combinedFields"), "one of select or combinedFields")},
	}, {
		name: "empty lists mean absent",
		sc: func() *controlv1alpha1.StatusCollector {
			sc := statusCollector("c")
			sc.Spec.Select, sc.Spec.CombinedFields, sc.Spec.GroupBy = []controlv1alpha1.NamedExpression{}, []controlv1alpha1.NamedAggregator{}, []controlv1alpha1.NamedExpression{}
			return sc
		}(),
		want: field.ErrorList{field.Required(spec.Child("combinedFields"), "")},
	}, {
		name: "groupBy needs combinedFields",
		sc:   statusCollector("c", withGroupBy("g", "1"), withSelect("a", "1")),
		want: field.ErrorList{field.Forbidden(spec.Child("groupBy"), "groupBy needs combinedFields")},
	}, {
		name: "COUNT has no subject",
		sc:   statusCollector("c", withAgg("n", count, "1")),
		want: field.ErrorList{field.Forbidden(subjectPath(0), "COUNT takes no subject")},
	}, {
		name: "SUM AVG MIN MAX need a subject",
		sc:   statusCollector("c", withCount("n"), withAgg("s", sum, ""), withAgg("a", avg, ""), withAgg("mi", min_, ""), withAgg("ma", max_, "")),
		want: field.ErrorList{
			field.Required(subjectPath(1), "SUM needs a subject"),
			field.Required(subjectPath(2), "AVG needs a subject"),
			field.Required(subjectPath(3), "MIN needs a subject"),
			field.Required(subjectPath(4), "MAX needs a subject"),
		},
	}, {
		name: "unknown aggregation type",
		sc:   statusCollector("c", withAgg("n", "MEDIAN", "1")),
		want: field.ErrorList{field.NotSupported(combinedField(0).Child("type"), "MEDIAN", []string{"COUNT"})},
	}, {
		name: "column names unique across groupBy and combinedFields",
		sc:   statusCollector("c", withGroupBy("x", "1"), withCount("x")),
		want: field.ErrorList{field.Duplicate(combinedField(0).Child("name"), "x")},
	}, {
		name: "column names unique within select",
		sc:   statusCollector("c", withSelect("x", "1"), withSelect("x", "2")),
		want: field.ErrorList{field.Duplicate(spec.Child("select").Index(1).Child("name"), "x")},
	}, {
		name: "column name empty and too long",
		sc:   statusCollector("c", withSelect("", "1"), withSelect(strings.Repeat("a", 254), "2"), withSelect(strings.Repeat("b", 253), "3")),
		want: field.ErrorList{
			field.Required(spec.Child("select").Index(0).Child("name"), ""),
			field.TooLong(spec.Child("select").Index(1).Child("name"), "", 253),
		},
	}, {
		name: "negative limit",
		sc:   statusCollector("c", withCount("n"), withLimit(-1)),
		want: field.ErrorList{field.Invalid(spec.Child("limit"), int64(-1), "must be greater than or equal to 1")},
	}, {
		name: "metadata.name must be a DNS subdomain",
		sc:   statusCollector("Bad_Name", withCount("n")),
		want: field.ErrorList{field.Invalid(metaName, "Bad_Name", "lowercase RFC 1123 subdomain")},
	}, {
		name: "metadata.name required",
		sc:   statusCollector("", withCount("n")),
		want: field.ErrorList{field.Required(metaName, "")},
	}}
}

// expressionErrorCases have expressions that are empty or do not compile.
func expressionErrorCases() []compileErrorCase {
	return []compileErrorCase{{
		name: "empty expressions are Required",
		sc:   statusCollector("c", withFilter(""), withGroupBy("g", " "), withAgg("s", sum, "\t")),
		want: field.ErrorList{field.Required(filterPath, ""), field.Required(groupByDef(0), ""), field.Required(subjectPath(0), "")},
	}, {
		name: "syntax error",
		sc:   statusCollector("c", withSelect("a", "1 +")),
		want: field.ErrorList{field.Invalid(selectDef(0), "1 +", "Syntax error")},
	}, {
		name: "misspelt inventory field",
		sc:   statusCollector("c", withSelect("a", "inventory.nmae")),
		want: field.ErrorList{field.Invalid(selectDef(0), "", "undefined field 'nmae'")},
	}, {
		name: "misspelt propagation field",
		sc:   statusCollector("c", withSelect("a", "propagation.lastReturnedUpdateTimestmp")),
		want: field.ErrorList{field.Invalid(selectDef(0), "", "undefined field 'lastReturnedUpdateTimestmp'")},
	}, {
		name: "misspelt returned field",
		sc:   statusCollector("c", withSelect("a", "returned.stauts")),
		want: field.ErrorList{field.Invalid(selectDef(0), "", "undefined field 'stauts'")},
	}, {
		name: "no clock",
		sc:   statusCollector("c", withSelect("a", "now()")),
		want: field.ErrorList{field.Invalid(selectDef(0), "", "undeclared reference to 'now'")},
	}, {
		name: "regex, timestamp and duration literals are checked",
		sc: statusCollector("c", withSelect("a", "returned.status.phase.matches('[')"),
			withSelect("b", "timestamp('yesterday')"), withSelect("c", "duration('1 hour')")),
		want: field.ErrorList{
			field.Invalid(selectDef(0), "", "invalid matches argument"),
			field.Invalid(selectDef(1), "", "invalid timestamp argument"),
			field.Invalid(selectDef(2), "", "invalid duration argument"),
		},
	}}
}

// typeErrorCases have a filter or subjects of a static type that the rules do not allow.
func typeErrorCases() []compileErrorCase {
	return []compileErrorCase{{
		name: "filter of a known non-bool type",
		sc:   statusCollector("c", withFilter("'yes'"), withCount("n")),
		want: field.ErrorList{field.Invalid(filterPath, "'yes'", "filter must evaluate to bool, but its type is string")},
	}, {
		name: "filter of type int",
		sc:   statusCollector("c", withFilter("1"), withCount("n")),
		want: field.ErrorList{field.Invalid(filterPath, "1", "its type is int")},
	}, {
		name: "filter inventory.name",
		sc:   statusCollector("c", withFilter("inventory.name"), withCount("n")),
		want: field.ErrorList{field.Invalid(filterPath, "", "its type is string")},
	}, {
		name: "filter null literal",
		sc:   statusCollector("c", withFilter("null"), withCount("n")),
		want: field.ErrorList{field.Invalid(filterPath, "", "its type is null_type")},
	}, {
		name: "subjects of non-numeric static types",
		sc: statusCollector("c", withAgg("a", sum, "true"), withAgg("b", avg, "[1, 2]"),
			withAgg("c", min_, "timestamp('2024-01-01T00:00:00Z')"), withAgg("d", max_, "inventory.labels")),
		want: field.ErrorList{
			field.Invalid(subjectPath(0), "", "SUM subject must evaluate to int, uint, double, string or dyn, but its type is bool"),
			field.Invalid(subjectPath(1), "", "its type is list(int)"),
			field.Invalid(subjectPath(2), "", "its type is google.protobuf.Timestamp"),
			field.Invalid(subjectPath(3), "", "its type is map(string, string)"),
		},
	}}
}

// sizeErrorCases have expressions too long, too deeply nested or too costly.
func sizeErrorCases() []compileErrorCase {
	return []compileErrorCase{{
		name: "expression too long",
		sc:   statusCollector("c", withSelect("a", longExpression)),
		want: field.ErrorList{field.TooLongCharacters(selectDef(0), "", 10000)},
	}, {
		name: "nested deeper than the parser allows",
		sc:   statusCollector("c", withSelect("a", strings.Repeat("(", 300)+"1"+strings.Repeat(")", 300))),
		want: field.ErrorList{field.Invalid(selectDef(0), "", "compilation failed")},
	}, {
		name: "three nested comprehensions exceed the cost limit",
		sc:   statusCollector("c", withSelect("a", nestedComprehension(3))),
		want: field.ErrorList{field.Forbidden(selectDef(0), "estimated expression cost exceeds budget")},
	}}
}

// everyErrorCases have several problems, all of which Compile reports at once.
func everyErrorCases() []compileErrorCase {
	return []compileErrorCase{{
		name: "every problem at once",
		sc: statusCollector("Bad", withFilter("1"), withSelect("a", "inventory.nmae"), withCount("a"),
			withAgg("s", sum, ""), withLimit(-5)),
		want: field.ErrorList{
			field.Invalid(metaName, "", ""),
			field.Invalid(spec.Child("limit"), "", ""),
			field.Forbidden(spec.Child("select"), ""),
			field.Invalid(filterPath, "", "its type is int"),
			field.Required(subjectPath(1), "SUM needs a subject"),
			field.Duplicate(spec.Child("select").Index(0).Child("name"), ""),
			field.Invalid(selectDef(0), "", "undefined field"),
		},
	}}
}

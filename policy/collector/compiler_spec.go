package collector

import (
	"fmt"

	"github.com/google/cel-go/common/types"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// specCompilation is what compiling one StatusCollector gathers: its field errors and warnings,
// in the order they are found, and the column names seen so far (unique across the collector).
type specCompilation struct {
	c        *Compiler
	errs     field.ErrorList
	warnings []string
	names    map[string]bool
}

// compile is Compile without the cache: it checks the name, the limit, the shape rules and
// every column, and compiles each expression.
func (c *Compiler) compile(sc *controlv1alpha1.StatusCollector) (*Collector, field.ErrorList, []string) {
	s := &specCompilation{c: c, names: map[string]bool{}}
	s.checkObjectName(sc.Name)

	spec := &sc.Spec
	specPath := field.NewPath("spec")
	col := &Collector{name: sc.Name, limit: spec.Limit, timeBudget: c.timeBudget}
	if col.limit == 0 {
		col.limit = controlv1alpha1.DefaultLimit
	}
	if spec.Limit < 0 {
		s.errs = append(s.errs, field.Invalid(specPath.Child("limit"), spec.Limit, "must be greater than or equal to 1"))
	}
	s.checkShape(spec, specPath)

	if spec.Filter != nil {
		col.filter = s.compileFilter(specPath.Child("filter"), *spec.Filter)
	}
	for i, ne := range spec.GroupBy {
		col.groupBy = append(col.groupBy, s.compileGroupBy(specPath.Child("groupBy").Index(i), ne))
	}
	for i, na := range spec.CombinedFields {
		col.aggregates = append(col.aggregates, s.compileAggregate(specPath.Child("combinedFields").Index(i), na))
	}
	for i, ne := range spec.Select {
		col.selects = append(col.selects, s.compileSelect(specPath.Child("select").Index(i), ne))
	}

	if len(s.errs) > 0 {
		return nil, s.errs, s.warnings
	}
	col.finish()
	return col, nil, s.warnings
}

// warn records a warning about the field at p.
func (s *specCompilation) warn(p *field.Path, msg string) {
	s.warnings = append(s.warnings, p.String()+": "+msg)
}

// checkObjectName checks metadata.name: required, a DNS subdomain.
func (s *specCompilation) checkObjectName(name string) {
	metaPath := field.NewPath("metadata", "name")
	if name == "" {
		s.errs = append(s.errs, field.Required(metaPath, ""))
		return
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		s.errs = append(s.errs, field.Invalid(metaPath, name, msg))
	}
}

// checkShape checks the shape rules. An empty list means the same as an absent one.
func (s *specCompilation) checkShape(spec *controlv1alpha1.StatusCollectorSpec, specPath *field.Path) {
	hasSelect, hasCombined, hasGroupBy := len(spec.Select) > 0, len(spec.CombinedFields) > 0, len(spec.GroupBy) > 0
	switch {
	case hasSelect && hasCombined:
		s.errs = append(s.errs, field.Forbidden(specPath.Child("select"), "select and combinedFields are mutually exclusive"))
	case !hasSelect && !hasCombined:
		s.errs = append(s.errs, field.Required(specPath.Child("combinedFields"), "one of select or combinedFields is required"))
	}
	if hasGroupBy && !hasCombined {
		s.errs = append(s.errs, field.Forbidden(specPath.Child("groupBy"), "groupBy needs combinedFields"))
	}
}

// checkName checks a column name: not empty, not too long, unique across the collector's columns.
func (s *specCompilation) checkName(p *field.Path, name string) {
	switch {
	case name == "":
		s.errs = append(s.errs, field.Required(p, "column name must not be empty"))
	case len(name) > MaxColumnNameLength:
		s.errs = append(s.errs, field.TooLong(p, name, MaxColumnNameLength))
	case s.names[name]:
		s.errs = append(s.errs, field.Duplicate(p, name))
	}
	s.names[name] = true
}

// compileFilter compiles the filter, which must be of type bool (or dyn); a constant false warns.
func (s *specCompilation) compileFilter(p *field.Path, filter controlv1alpha1.Expression) *expression {
	prg, a, e := s.c.compileExpr(p, string(filter))
	s.errs = append(s.errs, e...)
	if a != nil {
		if t := a.OutputType(); !isUnknownType(t) && !t.IsExactType(types.BoolType) {
			s.errs = append(s.errs, field.Invalid(p, string(filter),
				fmt.Sprintf("filter must evaluate to bool, but its type is %s", t)))
		}
		if isConstBool(a, false) {
			s.warn(p, "is the constant false, so every row is dropped")
		}
	}
	return prg
}

// compileGroupBy compiles one groupBy column.
func (s *specCompilation) compileGroupBy(p *field.Path, ne controlv1alpha1.NamedExpression) column {
	s.checkName(p.Child("name"), ne.Name)
	prg, _, e := s.c.compileExpr(p.Child("def"), string(ne.Def))
	s.errs = append(s.errs, e...)
	return column{name: ne.Name, prg: prg}
}

// compileAggregate compiles one combinedFields column: COUNT takes no subject; SUM, AVG, MIN and
// MAX need a subject of a numeric, string or dyn type.
func (s *specCompilation) compileAggregate(p *field.Path, na controlv1alpha1.NamedAggregator) aggregate {
	s.checkName(p.Child("name"), na.Name)
	agg := aggregate{column: column{name: na.Name}, typ: na.Type}
	switch na.Type {
	case controlv1alpha1.AggregatorTypeCount:
		if na.Subject != nil {
			s.errs = append(s.errs, field.Forbidden(p.Child("subject"), "COUNT takes no subject"))
		}
	case controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
		controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax:
		if na.Subject == nil {
			s.errs = append(s.errs, field.Required(p.Child("subject"), string(na.Type)+" needs a subject"))
			break
		}
		sp := p.Child("subject")
		prg, a, e := s.c.compileExpr(sp, string(*na.Subject))
		s.errs = append(s.errs, e...)
		if a != nil && !isNumericSubjectType(a.OutputType()) {
			s.errs = append(s.errs, field.Invalid(sp, string(*na.Subject), fmt.Sprintf(
				"%s subject must evaluate to int, uint, double, string or dyn, but its type is %s", na.Type, a.OutputType())))
		}
		agg.prg = prg
	default:
		s.errs = append(s.errs, field.NotSupported(p.Child("type"), na.Type, []string{
			string(controlv1alpha1.AggregatorTypeCount), string(controlv1alpha1.AggregatorTypeSum),
			string(controlv1alpha1.AggregatorTypeAvg), string(controlv1alpha1.AggregatorTypeMin),
			string(controlv1alpha1.AggregatorTypeMax)}))
	}
	return agg
}

// compileSelect compiles one select column; selecting the whole workload object warns.
func (s *specCompilation) compileSelect(p *field.Path, ne controlv1alpha1.NamedExpression) column {
	s.checkName(p.Child("name"), ne.Name)
	prg, a, e := s.c.compileExpr(p.Child("def"), string(ne.Def))
	s.errs = append(s.errs, e...)
	if a != nil && isIdent(a, varObj) {
		s.warn(p.Child("def"), "selects the whole workload object, which the CombinedStatus then repeats for every WEC")
	}
	return column{name: ne.Name, prg: prg}
}

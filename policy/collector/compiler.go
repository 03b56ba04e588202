package collector

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/lru"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The CEL variables of a collector expression (docs/rules.md "Collectors").
const (
	varInventory   = "inventory"
	varObj         = "obj"
	varReturned    = "returned"
	varPropagation = "propagation"

	fieldName                        = "name"
	fieldLabels                      = "labels"
	fieldStatus                      = "status"
	fieldLastReturnedUpdateTimestamp = "lastReturnedUpdateTimestamp"
)

// Limits of docs/rules.md "Collectors".
const (
	// MaxExpressionLength is the longest expression accepted, in characters.
	MaxExpressionLength = 10000
	// MaxColumnNameLength is the longest column name accepted.
	MaxColumnNameLength = 253
	// CostLimit is the limit on the static cost estimate of one expression, and on the actual cost
	// of one evaluation.
	CostLimit = maxCostPerEvaluated
)

// cacheSize bounds the compiled-collector cache, least recently used first out: a collector in
// use stays compiled (and keeps its *Collector, which the Tables of its pairs recognise) however
// many others come and go.
const cacheSize = 1024

// Compiler compiles StatusCollectors. It holds one CEL environment, built once. It is safe for
// concurrent use.
type Compiler struct {
	env         *cel.Env
	obj, status *apiservercel.DeclType
	timeBudget  time.Duration
	newExprs    bool

	cache *lru.Cache // [sha256.Size]byte → compileResult; safe for concurrent use
}

type compileResult struct {
	col      *Collector
	errs     field.ErrorList
	warnings []string
}

// CompilerOption configures a Compiler.
type CompilerOption func(*Compiler)

// WithTypes makes `obj` and `returned.status` typed (for the schema-aware admission check of a
// BindingPolicy); nil keeps a variable dynamic. DeclTypes come from
// k8s.io/apiserver/pkg/cel/common.SchemaDeclType(...) of a resource's OpenAPI schema.
func WithTypes(obj, status *apiservercel.DeclType) CompilerOption {
	return func(c *Compiler) {
		c.obj, c.status = obj, status
	}
}

// WithNewExpressions compiles in the environment for new expressions (admission: the webhook,
// `statusfold validate`), which has only the libraries of the Kubernetes version this one must
// stay compatible with (one minor version back), so that a rollback, or an apiserver of the
// previous version, can still compile what admission accepted. Without it the compiler uses the
// environment for stored expressions, with every library of this version: objects already
// stored keep working, whatever admitted them. This is the split of Kubernetes' own CEL
// (k8s.io/apiserver/pkg/cel/environment: NewExpressionsEnv, StoredExpressionsEnv).
func WithNewExpressions() CompilerOption {
	return func(c *Compiler) { c.newExprs = true }
}

// NewCompiler builds the CEL environment: Kubernetes' base environment (the apiserver's libraries,
// literal checks and cost settings) with the collector variables declared as typed objects.
func NewCompiler(opts ...CompilerOption) (*Compiler, error) {
	c := &Compiler{cache: lru.New(cacheSize), timeBudget: DefaultTimeBudget}
	for _, o := range opts {
		o(c)
	}
	env, err := newEnv(c.obj, c.status, c.newExprs)
	if err != nil {
		return nil, err
	}
	c.env = env
	return c, nil
}

func newEnv(obj, status *apiservercel.DeclType, newExprs bool) (*cel.Env, error) {
	inventory := apiservercel.NewObjectType("statusfold.Inventory", map[string]*apiservercel.DeclField{
		fieldName: apiservercel.NewDeclField(fieldName, apiservercel.StringType, true, nil, nil),
		fieldLabels: apiservercel.NewDeclField(fieldLabels,
			apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, inventoryLabelsMax), true, nil, nil),
	})
	declTypes := []*apiservercel.DeclType{inventory}
	objType := apiservercel.DynType
	if obj != nil {
		objType = obj.MaybeAssignTypeName("statusfold.Object")
		declTypes = append(declTypes, objType)
	}
	statusType := apiservercel.DynType
	if status != nil {
		statusType = status.MaybeAssignTypeName("statusfold.ReturnedStatus")
		declTypes = append(declTypes, statusType)
	}
	returned := apiservercel.NewObjectType("statusfold.Returned", map[string]*apiservercel.DeclField{
		fieldStatus: apiservercel.NewDeclField(fieldStatus, statusType, true, nil, nil),
	})
	propagation := apiservercel.NewObjectType("statusfold.Propagation", map[string]*apiservercel.DeclField{
		fieldLastReturnedUpdateTimestamp: apiservercel.NewDeclField(fieldLastReturnedUpdateTimestamp,
			apiservercel.TimestampType, false, nil, nil),
	})
	declTypes = append(declTypes, returned, propagation)

	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	set, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable(varInventory, inventory.CelType()),
			cel.Variable(varObj, objType.CelType()),
			cel.Variable(varReturned, returned.CelType()),
			cel.Variable(varPropagation, propagation.CelType()),
		},
		DeclTypes: declTypes,
	})
	if err != nil {
		return nil, fmt.Errorf("building the collector CEL environment: %w", err)
	}
	if newExprs {
		return set.NewExpressionsEnv(), nil
	}
	return set.StoredExpressionsEnv(), nil
}

// Compile runs every shape rule and static check; errs has field paths under spec./metadata.
// A nil *Collector is returned when errs is non-empty. Results are cached by a hash of the name
// and spec, so an unchanged StatusCollector gives the same *Collector (which a Table recognises).
func (c *Compiler) Compile(sc *controlv1alpha1.StatusCollector) (col *Collector, errs field.ErrorList, warnings []string) {
	key := cacheKey(sc)
	if v, ok := c.cache.Get(key); ok {
		r := v.(compileResult)
		return r.col, slices.Clone(r.errs), slices.Clone(r.warnings)
	}
	var r compileResult
	r.col, r.errs, r.warnings = c.compile(sc)
	c.cache.Add(key, r)
	return r.col, slices.Clone(r.errs), slices.Clone(r.warnings)
}

func cacheKey(sc *controlv1alpha1.StatusCollector) [sha256.Size]byte {
	b, err := json.Marshal(struct {
		Name string                              `json:"name"`
		Spec controlv1alpha1.StatusCollectorSpec `json:"spec"`
	}{sc.Name, sc.Spec})
	if err != nil { // cannot happen: the spec is plain data
		panic(err)
	}
	return sha256.Sum256(b)
}

func (c *Compiler) compile(sc *controlv1alpha1.StatusCollector) (*Collector, field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	warn := func(p *field.Path, msg string) { warnings = append(warnings, p.String()+": "+msg) }

	metaPath := field.NewPath("metadata", "name")
	if sc.Name == "" {
		errs = append(errs, field.Required(metaPath, ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(sc.Name) {
			errs = append(errs, field.Invalid(metaPath, sc.Name, msg))
		}
	}

	spec := &sc.Spec
	specPath := field.NewPath("spec")
	col := &Collector{name: sc.Name, limit: spec.Limit, timeBudget: c.timeBudget}
	if col.limit == 0 {
		col.limit = controlv1alpha1.DefaultLimit
	}
	if spec.Limit < 0 {
		errs = append(errs, field.Invalid(specPath.Child("limit"), spec.Limit, "must be greater than or equal to 1"))
	}

	// Shape rules. An empty list means the same as an absent one.
	hasSelect, hasCombined, hasGroupBy := len(spec.Select) > 0, len(spec.CombinedFields) > 0, len(spec.GroupBy) > 0
	switch {
	case hasSelect && hasCombined:
		errs = append(errs, field.Forbidden(specPath.Child("select"), "select and combinedFields are mutually exclusive"))
	case !hasSelect && !hasCombined:
		errs = append(errs, field.Required(specPath.Child("combinedFields"), "one of select or combinedFields is required"))
	}
	if hasGroupBy && !hasCombined {
		errs = append(errs, field.Forbidden(specPath.Child("groupBy"), "groupBy needs combinedFields"))
	}

	names := map[string]bool{}
	checkName := func(p *field.Path, name string) {
		switch {
		case name == "":
			errs = append(errs, field.Required(p, "column name must not be empty"))
		case len(name) > MaxColumnNameLength:
			errs = append(errs, field.TooLong(p, name, MaxColumnNameLength))
		case names[name]:
			errs = append(errs, field.Duplicate(p, name))
		}
		names[name] = true
	}

	if spec.Filter != nil {
		p := specPath.Child("filter")
		prg, a, e := c.compileExpr(p, string(*spec.Filter))
		errs = append(errs, e...)
		if a != nil {
			if t := a.OutputType(); !isUnknownType(t) && !t.IsExactType(types.BoolType) {
				errs = append(errs, field.Invalid(p, string(*spec.Filter),
					fmt.Sprintf("filter must evaluate to bool, but its type is %s", t)))
			}
			if isConstBool(a, false) {
				warn(p, "is the constant false, so every row is dropped")
			}
		}
		col.filter = prg
	}
	for i, ne := range spec.GroupBy {
		p := specPath.Child("groupBy").Index(i)
		checkName(p.Child("name"), ne.Name)
		prg, _, e := c.compileExpr(p.Child("def"), string(ne.Def))
		errs = append(errs, e...)
		col.groupBy = append(col.groupBy, column{name: ne.Name, prg: prg})
	}
	for i, na := range spec.CombinedFields {
		p := specPath.Child("combinedFields").Index(i)
		checkName(p.Child("name"), na.Name)
		agg := aggregate{column: column{name: na.Name}, typ: na.Type}
		switch na.Type {
		case controlv1alpha1.AggregatorTypeCount:
			if na.Subject != nil {
				errs = append(errs, field.Forbidden(p.Child("subject"), "COUNT takes no subject"))
			}
		case controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
			controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax:
			if na.Subject == nil {
				errs = append(errs, field.Required(p.Child("subject"), string(na.Type)+" needs a subject"))
				break
			}
			sp := p.Child("subject")
			prg, a, e := c.compileExpr(sp, string(*na.Subject))
			errs = append(errs, e...)
			if a != nil && !isNumericSubjectType(a.OutputType()) {
				errs = append(errs, field.Invalid(sp, string(*na.Subject), fmt.Sprintf(
					"%s subject must evaluate to int, uint, double, string or dyn, but its type is %s", na.Type, a.OutputType())))
			}
			agg.prg = prg
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), na.Type, []string{
				string(controlv1alpha1.AggregatorTypeCount), string(controlv1alpha1.AggregatorTypeSum),
				string(controlv1alpha1.AggregatorTypeAvg), string(controlv1alpha1.AggregatorTypeMin),
				string(controlv1alpha1.AggregatorTypeMax)}))
		}
		col.aggregates = append(col.aggregates, agg)
	}
	for i, ne := range spec.Select {
		p := specPath.Child("select").Index(i)
		checkName(p.Child("name"), ne.Name)
		prg, a, e := c.compileExpr(p.Child("def"), string(ne.Def))
		errs = append(errs, e...)
		if a != nil && isIdent(a, varObj) {
			warn(p.Child("def"), "selects the whole workload object, which the CombinedStatus then repeats for every WEC")
		}
		col.selects = append(col.selects, column{name: ne.Name, prg: prg})
	}

	if len(errs) > 0 {
		return nil, errs, warnings
	}
	col.finish()
	return col, nil, warnings
}

// compileExpr parses, checks, estimates the cost of and plans one expression. It returns the
// program and the checked AST, or field errors at p.
func (c *Compiler) compileExpr(p *field.Path, expr string) (*expression, *cel.Ast, field.ErrorList) {
	if strings.TrimSpace(expr) == "" {
		return nil, nil, field.ErrorList{field.Required(p, "")}
	}
	if n := len([]rune(expr)); n > MaxExpressionLength {
		return nil, nil, field.ErrorList{field.TooLongCharacters(p, expr, MaxExpressionLength)}
	}
	a, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, expr, "compilation failed: "+iss.String())}
	}
	est, err := c.env.EstimateCost(a, newCostEstimator(a.NativeRep(), c.obj, c.status))
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(p, fmt.Errorf("estimating the cost: %w", err))}
	}
	if est.Max > CostLimit {
		return nil, nil, field.ErrorList{field.Forbidden(p, fmt.Sprintf(
			"estimated expression cost exceeds budget by factor of %s (try simplifying the expression; "+
				"the estimate assumes reported lists and maps of up to %d entries and strings of up to %d bytes)",
			costFactor(est.Max), dynMaxElements, dynMaxStringBytes))}
	}
	prg, err := c.env.Program(a, cel.InterruptCheckFrequency(interruptCheckFrequency))
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(p, expr, "program construction failed: "+err.Error())}
	}
	root := a.NativeRep().Expr()
	return newExpression(prg, root), a, nil
}

func costFactor(cost uint64) string {
	return fmt.Sprintf("%.1fx", float64(cost)/float64(CostLimit))
}

// isUnknownType says whether a static type leaves the runtime type open.
func isUnknownType(t *types.Type) bool {
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.TypeParamKind:
		return true
	}
	return false
}

func isNumericSubjectType(t *types.Type) bool {
	if isUnknownType(t) {
		return true
	}
	switch t.Kind() {
	case types.IntKind, types.UintKind, types.DoubleKind, types.StringKind:
		return true
	}
	return false
}

func isConstBool(a *cel.Ast, want bool) bool {
	e := a.NativeRep().Expr()
	return e.Kind() == ast.LiteralKind && e.AsLiteral() == types.Bool(want)
}

func isIdent(a *cel.Ast, name string) bool {
	e := a.NativeRep().Expr()
	return e.Kind() == ast.IdentKind && e.AsIdent() == name
}

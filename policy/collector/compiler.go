package collector

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/cel-go/cel"

	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
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

package collector

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Size assumptions of docs/rules.md "Collectors" for the static cost estimate. Reported state has no schema, so a
// dynamic list or map counts as at most dynMaxElements elements and a dynamic string as at most
// dynMaxStringBytes bytes.
const (
	dynMaxElements      = 100
	dynMaxStringBytes   = 1024
	inventoryNameMax    = 253
	inventoryLabelsMax  = 64
	maxCostPerEvaluated = 1_000_000
)

// sizeEstimator gives the checker the sizes of values whose size CEL cannot know, under the size
// assumptions above. A node of static type dyn is taken to be a list or map of at most
// dynMaxElements entries where it is the range of a comprehension (the only place where its
// element count drives the cost), and a string of at most dynMaxStringBytes elsewhere.
//
// It is built per expression, because which nodes are comprehension ranges depends on the AST.
type sizeEstimator struct {
	iterRanges map[int64]bool
	// obj and status are the declared types of `obj` and `returned.status` (nil when dynamic);
	// a schema's bounds are used when they are tighter than the defaults.
	obj, status *apiservercel.DeclType
}

var _ checker.CostEstimator = (*sizeEstimator)(nil)

// newCostEstimator returns the Kubernetes library cost estimator (function costs) with a size
// estimator for the given checked AST.
func newCostEstimator(checked *ast.AST, obj, status *apiservercel.DeclType) checker.CostEstimator {
	s := &sizeEstimator{iterRanges: map[int64]bool{}, obj: obj, status: status}
	ast.PostOrderVisit(checked.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.ComprehensionKind {
			s.iterRanges[e.AsComprehension().IterRange().ID()] = true
		}
	}))
	return &library.CostEstimator{SizeEstimator: s}
}

func (s *sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	if len(path) == 2 && path[0] == "inventory" {
		switch path[1] {
		case "name":
			return fixedSize(inventoryNameMax)
		case "labels":
			return fixedSize(inventoryLabelsMax)
		}
	}
	var limit uint64
	switch node.Type().Kind() {
	case types.StringKind, types.BytesKind:
		limit = dynMaxStringBytes
	case types.ListKind, types.MapKind:
		limit = dynMaxElements
	case types.DynKind, types.AnyKind, types.StructKind:
		if s.iterRanges[node.Expr().ID()] {
			limit = dynMaxElements
		} else {
			limit = dynMaxStringBytes
		}
	default:
		return nil
	}
	if declared := s.declaredMax(path); declared >= 0 && uint64(declared) < limit {
		limit = uint64(declared)
	}
	return fixedSize(limit)
}

// declaredMax returns the schema bound (maxItems, maxProperties, maxLength) of the field at path
// in a declared type, or -1 when there is none.
func (s *sizeEstimator) declaredMax(path []string) int64 {
	var t *apiservercel.DeclType
	var rest []string
	switch {
	case len(path) >= 1 && path[0] == "obj":
		t, rest = s.obj, path[1:]
	case len(path) >= 2 && path[0] == "returned" && path[1] == "status":
		t, rest = s.status, path[2:]
	}
	for _, name := range rest {
		if t == nil {
			return -1
		}
		f, ok := t.FindField(name)
		if !ok {
			return -1
		}
		t = f.Type
	}
	if t == nil || t.MaxElements <= 0 {
		return -1
	}
	return t.MaxElements
}

func (s *sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

func fixedSize(n uint64) *checker.SizeEstimate {
	e := checker.FixedSizeEstimate(n)
	return &e
}

package check

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/parser"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	celcommon "k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
)

// typedWarnings compiles sc with `obj` and `returned.status` typed by gvk's schema and turns each
// resulting error into a warning naming the collector, the field and the problem.
func (c *Checker) typedWarnings(sc *controlv1alpha1.StatusCollector, gvk schema.GroupVersionKind) []string {
	if c.opts.Schemas == nil {
		return nil
	}
	comp, err := c.typedCompiler(gvk)
	if err != nil {
		return []string{fmt.Sprintf("collector %q: not checked against %s: %v", sc.Name, kindString(gvk), err)}
	}
	_, errs, _ := comp.Compile(sc)
	var warnings []string
	for _, e := range errs {
		expr, _ := e.BadValue.(string)
		for _, msg := range explain(e.Detail, expr, gvk) {
			warnings = append(warnings, fmt.Sprintf("collector %q: %s: %s", sc.Name, e.Field, msg))
		}
	}
	return warnings
}

// typedCompiler returns a collector compiler whose `obj` has gvk's schema without `status`, and
// whose `returned.status` has the schema of gvk's `status`. Compilers are cached while the
// resolver returns the same schema.
func (c *Checker) typedCompiler(gvk schema.GroupVersionKind) (*collector.Compiler, error) {
	s, err := c.opts.Schemas.ResolveSchema(gvk)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.typed[gvk]
	c.mu.Unlock()
	if ok && e.schema == s {
		return e.compiler, e.err
	}
	e = typedEntry{schema: s}
	objSchema := *s
	objSchema.Properties = make(map[string]spec.Schema, len(s.Properties))
	var statusType *apiservercel.DeclType
	for k, v := range s.Properties {
		if k == "status" {
			statusType = celcommon.SchemaDeclType(&openapi.Schema{Schema: dynamicUnknown(&v)}, false)
			continue
		}
		objSchema.Properties[k] = v
	}
	objType := celcommon.SchemaDeclType(&openapi.Schema{Schema: dynamicUnknown(&objSchema)}, true)
	e.compiler, e.err = collector.NewCompiler(collector.WithTypes(objType, statusType), collector.WithNewExpressions())
	c.mu.Lock()
	c.typed[gvk] = e
	c.mu.Unlock()
	return e.compiler, e.err
}

// intOrString is the OpenAPI format that CEL types as dyn.
const intOrString = "int-or-string"

// dynamicUnknown returns a copy of s in which every part whose content the schema leaves open
// (x-kubernetes-preserve-unknown-fields, or no type at all) is marked so that CEL types it as dyn:
// expressions may use any field there, as at run time. Without this, CEL would see an object with
// no fields and every access would look misspelt.
func dynamicUnknown(s *spec.Schema) *spec.Schema {
	out := *s
	preserve, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields")
	if (preserve && len(s.Properties) == 0 && s.AdditionalProperties == nil && !s.Type.Contains("array")) ||
		(len(s.Type) == 0 && len(s.Properties) == 0 && s.Items == nil && s.AdditionalProperties == nil) {
		out.Type, out.Format, out.Properties = nil, intOrString, nil
		return &out
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, v := range s.Properties {
			out.Properties[k] = *dynamicUnknown(&v)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		items := *s.Items
		items.Schema = dynamicUnknown(s.Items.Schema)
		out.Items = &items
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		ap := *s.AdditionalProperties
		ap.Schema = dynamicUnknown(s.AdditionalProperties.Schema)
		out.AdditionalProperties = &ap
	}
	return &out
}

// celErrorLine matches one error of a CEL issues string: "ERROR: <input>:1:34: message".
var celErrorLine = regexp.MustCompile(`(?m)ERROR: <input>:(\d+):(\d+): (.*)$`)

var undefinedField = regexp.MustCompile(`^undefined field '([^']*)'$`)

// explain turns the detail of a typed-compile error into messages for users: "no such field 'x'
// in apps/v1 Deployment .status" when the error is a misspelt field under obj or returned.status,
// else the compiler's message with the kind it was typed with.
func explain(detail, expr string, gvk schema.GroupVersionKind) []string {
	matches := celErrorLine.FindAllStringSubmatch(detail, -1)
	if len(matches) == 0 {
		return []string{fmt.Sprintf("%s (with obj and returned.status typed as %s)", detail, kindString(gvk))}
	}
	var parsed *ast.AST
	if expr != "" {
		parsed, _ = parser.Parse(common.NewTextSource(expr))
	}
	var out []string
	for _, m := range matches {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		msg := m[3]
		if f := undefinedField.FindStringSubmatch(msg); f != nil && parsed != nil {
			if where, ok := fieldOwner(parsed, line, col-1, f[1], gvk); ok {
				out = append(out, fmt.Sprintf("no such field '%s' in %s", f[1], where))
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s (with obj and returned.status typed as %s)", msg, kindString(gvk)))
	}
	return out
}

// fieldOwner finds the selection of fieldName at (line, col) in a parsed expression and, when it
// is a plain chain under obj or returned.status, says where the field was looked up, e.g.
// "apps/v1 Deployment .status" or "apps/v1 Deployment .spec.template".
func fieldOwner(a *ast.AST, line, col int, fieldName string, gvk schema.GroupVersionKind) (string, bool) {
	var found ast.Expr
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if found != nil || e.Kind() != ast.SelectKind || e.AsSelect().FieldName() != fieldName {
			return
		}
		if loc := a.SourceInfo().GetStartLocation(e.ID()); loc.Line() == line && loc.Column() == col {
			found = e
		}
	}))
	if found == nil {
		return "", false
	}
	// The chain of selections and constant indexes down to a variable, e.g. ["obj", ".spec",
	// ".containers", "[0]"].
	var chain []string
	for e := found.AsSelect().Operand(); ; {
		switch {
		case e.Kind() == ast.SelectKind:
			chain = append([]string{"." + e.AsSelect().FieldName()}, chain...)
			e = e.AsSelect().Operand()
			continue
		case e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.Index && len(e.AsCall().Args()) == 2:
			idx := "[…]"
			if arg := e.AsCall().Args()[1]; arg.Kind() == ast.LiteralKind {
				idx = fmt.Sprintf("[%v]", arg.AsLiteral().Value())
			}
			chain = append([]string{idx}, chain...)
			e = e.AsCall().Args()[0]
			continue
		case e.Kind() == ast.IdentKind:
			chain = append([]string{e.AsIdent()}, chain...)
		default:
			return "", false
		}
		break
	}
	kind := kindString(gvk)
	switch {
	case chain[0] == "obj" && len(chain) == 1 && fieldName == "status":
		return kind + " as obj (obj has no .status: use returned.status)", true
	case chain[0] == "obj":
		if len(chain) == 1 {
			return kind, true
		}
		return kind + " " + strings.Join(chain[1:], ""), true
	case len(chain) >= 2 && chain[0] == "returned" && chain[1] == ".status":
		return kind + " " + strings.Join(chain[1:], ""), true
	}
	return "", false
}

// lookupPointer follows p through schema s. It reports false, with the path where it stopped and
// the token it did not find, when s says the path cannot exist. Parts that s leaves open (unknown
// fields preserved, no type) accept every path.
func lookupPointer(s *spec.Schema, p controlv1alpha1.JSONPointer) (at string, missing string, ok bool) {
	cur := s
	for i, tok := range p {
		preserve, _ := cur.Extensions.GetBool("x-kubernetes-preserve-unknown-fields")
		switch {
		case cur.Type.Contains("array"):
			if _, err := strconv.Atoi(tok); err != nil && tok != "-" {
				return pointerString(p[:i]), tok, false
			}
			if cur.Items == nil || cur.Items.Schema == nil {
				return "", "", true
			}
			cur = cur.Items.Schema
		case len(cur.Properties) > 0 || cur.Type.Contains("object"):
			if prop, ok := cur.Properties[tok]; ok {
				cur = &prop
				continue
			}
			if cur.AdditionalProperties != nil {
				if cur.AdditionalProperties.Schema == nil {
					return "", "", cur.AdditionalProperties.Allows
				}
				cur = cur.AdditionalProperties.Schema
				continue
			}
			if preserve || len(cur.Properties) == 0 {
				return "", "", true
			}
			return pointerString(p[:i]), tok, false
		case len(cur.Type) == 0 || cur.Format == intOrString:
			if cur.Format == intOrString {
				return pointerString(p[:i]), tok, false
			}
			return "", "", true
		default: // a scalar has no fields
			return pointerString(p[:i]), tok, false
		}
	}
	return "", "", true
}

func pointerString(p controlv1alpha1.JSONPointer) string {
	if len(p) == 0 {
		return "/"
	}
	return classifier.String(p)
}

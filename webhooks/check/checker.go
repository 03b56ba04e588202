package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/api/control/v1alpha1/validation"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
)

// CollectorGetter finds a StatusCollector by name. It returns an error for which
// apierrors.IsNotFound is true when the collector does not exist, and ErrUnknown when it cannot
// tell (e.g. `statusfold validate` was not given the collector's file).
type CollectorGetter interface {
	GetStatusCollector(ctx context.Context, name string) (*controlv1alpha1.StatusCollector, error)
}

// CollectorGetterFunc adapts a function to CollectorGetter.
type CollectorGetterFunc func(ctx context.Context, name string) (*controlv1alpha1.StatusCollector, error)

var _ CollectorGetter = CollectorGetterFunc(nil)

// GetStatusCollector calls f.
func (f CollectorGetterFunc) GetStatusCollector(ctx context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
	return f(ctx, name)
}

// PolicyLister lists the BindingPolicies, so that a StatusCollector's admission can type-check
// it against the resources of the policies that apply it.
type PolicyLister interface {
	ListBindingPolicies(ctx context.Context) ([]controlv1alpha1.BindingPolicy, error)
}

// PolicyListerFunc adapts a function to PolicyLister.
type PolicyListerFunc func(ctx context.Context) ([]controlv1alpha1.BindingPolicy, error)

var _ PolicyLister = PolicyListerFunc(nil)

// ListBindingPolicies calls f.
func (f PolicyListerFunc) ListBindingPolicies(ctx context.Context) ([]controlv1alpha1.BindingPolicy, error) {
	return f(ctx)
}

// ErrUnknown says that a lookup cannot tell whether the object exists; the Checker then skips the
// checks that need it, without a warning.
var ErrUnknown = errors.New("not known")

// ResourceMapper is the part of meta.RESTMapper a Checker uses.
type ResourceMapper interface {
	KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error)
	ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error)
}

// Options are the optional lookups of a Checker; a nil lookup skips the checks that need it.
type Options struct {
	// Collectors finds the StatusCollectors that BindingPolicies name.
	Collectors CollectorGetter
	// Policies lists BindingPolicies: a collector is type-checked against the resources that
	// the policies applying it name (the schema-aware check, seen from the collector's side).
	Policies PolicyLister
	// Mapper says which resources are served and what their kinds are (e.g. the manager's
	// discovery-backed REST mapper).
	Mapper ResourceMapper
	// Schemas resolves a kind's OpenAPI schema with references populated (DiscoverySchemas
	// online, OfflineSchemas offline). It should return the same *spec.Schema while the schema
	// is unchanged: typed CEL environments are cached by it. Needs Mapper.
	Schemas resolver.SchemaResolver
}

// Checker runs the admission checks. It is safe for concurrent use; build one and keep it, since
// it caches compiled collectors and typed CEL environments.
type Checker struct {
	opts     Options
	compiler *collector.Compiler

	mu    sync.Mutex
	typed map[schema.GroupVersionKind]typedEntry
}

type typedEntry struct {
	schema   *spec.Schema
	compiler *collector.Compiler
	err      error
}

// New returns a Checker with the given lookups.
func New(opts Options) (*Checker, error) {
	comp, err := collector.NewCompiler(collector.WithNewExpressions())
	if err != nil {
		return nil, err
	}
	return &Checker{opts: opts, compiler: comp, typed: map[schema.GroupVersionKind]typedEntry{}}, nil
}

// StatusCollector returns every problem of sc that the collector compiler finds, and its
// warnings; with Policies, Mapper and Schemas also the schema-aware warnings for the resources
// of the BindingPolicies that apply sc.
func (c *Checker) StatusCollector(ctx context.Context, sc *controlv1alpha1.StatusCollector) (field.ErrorList, []string) {
	_, errs, warnings := c.compiler.Compile(sc)
	if len(errs) > 0 || c.opts.Policies == nil || c.opts.Mapper == nil || c.opts.Schemas == nil {
		return errs, warnings
	}
	bps, err := c.opts.Policies.ListBindingPolicies(ctx)
	if errors.Is(err, ErrUnknown) {
		return errs, warnings
	}
	if err != nil {
		return errs, append(warnings, fmt.Sprintf("could not list BindingPolicies to check this collector against their resources: %v", err))
	}
	done := sets.New[schema.GroupVersionKind]()
	for i := range bps {
		for j := range bps[i].Spec.Downsync {
			clause := &bps[i].Spec.Downsync[j]
			if !slices.Contains(clause.StatusCollectors, sc.Name) {
				continue
			}
			kinds, _ := c.clauseKinds(clause, nil)
			for _, gvk := range kinds {
				if done.Has(gvk) {
					continue
				}
				done.Insert(gvk)
				for _, w := range c.typedWarnings(sc, gvk) {
					warnings = append(warnings, fmt.Sprintf("%s (applied by BindingPolicy %q)", w, bps[i].Name))
				}
			}
		}
	}
	return errs, warnings
}

// compile is the collector compiler's verdict on sc, without lookups.
func (c *Checker) compile(sc *controlv1alpha1.StatusCollector) field.ErrorList {
	_, errs, _ := c.compiler.Compile(sc)
	return errs
}

// AggregationPolicy returns the errors of an aggregation policy: its Rego module compiled in
// the sandbox, the required rule, and its examples run, all within ctx (the admission request's
// context; policy/aggregation.ValidatePolicyContext).
func (c *Checker) AggregationPolicy(ctx context.Context, p *policyv1alpha1.AggregationPolicy) (field.ErrorList, []string) {
	return aggregation.ValidatePolicyContext(ctx, p), nil
}

// ContentClassifier returns the errors of docs/rules.md "ContentClassifier" and warnings for a resource that is not served
// and for pointers that name a path the resource's schema lacks.
func (c *Checker) ContentClassifier(cc *controlv1alpha1.ContentClassifier) (field.ErrorList, []string) {
	errs := classifier.Validate(cc)
	namePath := field.NewPath("metadata", "name")
	gvr, nameErrs := classifier.ParseName(cc.Name, namePath)
	if len(nameErrs) > 0 || c.opts.Mapper == nil {
		return errs, nil
	}
	var warnings []string
	gvk, err := c.opts.Mapper.KindFor(gvr)
	switch {
	case meta.IsNoMatchError(err):
		return errs, []string{fmt.Sprintf("%s: resource %q of %s is not served; the classifier takes effect when it is",
			namePath, gvr.Resource, gvr.GroupVersion())}
	case err != nil:
		return errs, []string{fmt.Sprintf("%s: could not look up resource %q of %s: %v", namePath, gvr.Resource, gvr.GroupVersion(), err)}
	}
	if c.opts.Schemas == nil {
		return errs, nil
	}
	s, err := c.opts.Schemas.ResolveSchema(gvk)
	if err != nil {
		return errs, []string{fmt.Sprintf("%s: no schema for %s, pointers not checked: %v", namePath, kindString(gvk), err)}
	}
	check := func(list string, ptrs []controlv1alpha1.JSONPointer) {
		for i, p := range ptrs {
			if len(p) == 0 {
				continue
			}
			if at, tok, ok := lookupPointer(s, p); !ok {
				warnings = append(warnings, fmt.Sprintf("%s: %s has no field %q at %q, so this pointer matches nothing",
					field.NewPath("spec", list).Index(i), kindString(gvk), tok, at))
			}
		}
	}
	check("desiredStatePointers", cc.Spec.DesiredStatePointers)
	check("dontPropagatePointers", cc.Spec.DontPropagatePointers)
	return errs, warnings
}

// BindingPolicy returns the shape errors of bp and warnings: suspicious shapes, collectors that
// do not exist or are invalid, resources that are not served, and collector expressions that do
// not type-check against the schemas of the resources a clause names explicitly.
func (c *Checker) BindingPolicy(ctx context.Context, bp *controlv1alpha1.BindingPolicy) (field.ErrorList, []string) {
	errs := validation.ValidateBindingPolicy(bp)
	warnings := validation.BindingPolicyWarnings(bp)
	if c.opts.Collectors == nil {
		return errs, warnings
	}
	type lookup struct {
		sc    *controlv1alpha1.StatusCollector
		valid bool
	}
	looked := map[string]lookup{}
	typedDone := sets.New[string]()
	for i := range bp.Spec.Downsync {
		clause := &bp.Spec.Downsync[i]
		clausePath := field.NewPath("spec", "downsync").Index(i)
		var kinds []schema.GroupVersionKind
		if len(clause.StatusCollectors) > 0 {
			var kw []string
			kinds, kw = c.clauseKinds(clause, clausePath)
			warnings = append(warnings, kw...)
		}
		for j, name := range clause.StatusCollectors {
			p := clausePath.Child("statusCollectors").Index(j)
			l, seen := looked[name]
			if !seen {
				sc, err := c.opts.Collectors.GetStatusCollector(ctx, name)
				switch {
				case errors.Is(err, ErrUnknown):
				case apierrors.IsNotFound(err) || (err == nil && sc == nil):
					warnings = append(warnings, fmt.Sprintf("%s: StatusCollector %q not found; its result appears once it exists", p, name))
				case err != nil:
					warnings = append(warnings, fmt.Sprintf("%s: could not look up StatusCollector %q: %v", p, name, err))
				default:
					cerrs := c.compile(sc)
					l = lookup{sc: sc, valid: len(cerrs) == 0}
					if !l.valid {
						warnings = append(warnings, fmt.Sprintf("%s: StatusCollector %q is invalid and is skipped: %s", p, name, cerrs[0].Error()))
					}
				}
				looked[name] = l
			}
			if !l.valid {
				continue
			}
			for _, gvk := range kinds {
				key := name + "\x00" + gvk.String()
				if typedDone.Has(key) {
					continue
				}
				typedDone.Insert(key)
				warnings = append(warnings, c.typedWarnings(l.sc, gvk)...)
			}
		}
	}
	return errs, warnings
}

// clauseKinds returns the kinds of the resources a clause names explicitly, with warnings for
// those that are not served.
func (c *Checker) clauseKinds(clause *controlv1alpha1.DownsyncPolicyClause, clausePath *field.Path) ([]schema.GroupVersionKind, []string) {
	group, resources := validation.ExplicitResources(clause)
	if c.opts.Mapper == nil || len(resources) == 0 {
		return nil, nil
	}
	var kinds []schema.GroupVersionKind
	var warnings []string
	for k, r := range resources {
		gvrs, err := c.opts.Mapper.ResourcesFor(schema.GroupVersionResource{Group: deref(group), Resource: r})
		if err != nil && !meta.IsNoMatchError(err) {
			warnings = append(warnings, fmt.Sprintf("%s: could not look up resource %q: %v", clausePath.Child("resources").Index(k), r, err))
			continue
		}
		groups := sets.New[string]()
		for _, gvr := range gvrs {
			if (group != nil && gvr.Group != *group) || gvr.Resource != r || groups.Has(gvr.Group) {
				continue // another group, a singular match, or a less preferred version
			}
			groups.Insert(gvr.Group)
			if gvk, err := c.opts.Mapper.KindFor(gvr); err == nil {
				kinds = append(kinds, gvk)
			}
		}
		if groups.Len() == 0 {
			where := "in any API group"
			if group != nil {
				where = fmt.Sprintf("in API group %q", *group)
			}
			warnings = append(warnings, fmt.Sprintf("%s: resource %q is not served %s", clausePath.Child("resources").Index(k), r, where))
		}
	}
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return kinds, warnings
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// kindString names a kind as users read it: "apps/v1 Deployment", "v1 Pod".
func kindString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

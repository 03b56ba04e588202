package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// The webhook asks the apiserver, with a SubjectAccessReview, whether the requester of an
// AggregationPolicy or BindingPolicy may do what the object makes statusfold do
// (docs/security.md, "Confused deputy").
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MaxNamespaceReviews is the most namespaces of one BindingPolicy clause that are reviewed one by
// one; a clause listing more is reviewed cluster-wide.
const MaxNamespaceReviews = 16

// Authorizer answers whether user may do what attrs describe.
type Authorizer interface {
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// AuthorizerFunc is an Authorizer made of a function.
type AuthorizerFunc func(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)

// Allowed calls f.
func (f AuthorizerFunc) Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	return f(ctx, user, attrs)
}

// SARAuthorizer answers with SubjectAccessReviews (username, groups, UID and extra of the user).
func SARAuthorizer(sar authorizationv1client.SubjectAccessReviewInterface) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &attrs, User: user.Username, Groups: user.Groups, UID: user.UID}}
		for k, v := range user.Extra {
			if review.Spec.Extra == nil {
				review.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			}
			review.Spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
		got, err := sar.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Allowed, nil
	})
}

// Access holds the requester checks of the AggregationPolicy and BindingPolicy webhooks. The
// requester is the UserInfo of the AdmissionRequest in the context; without one, the object is
// refused.
type Access struct {
	Authorizer Authorizer
	// Mapper resolves an AggregationPolicy's target kind to its resource; nil, or a kind it does
	// not know, means the lowercase plural guessed from the kind (with a warning).
	Mapper meta.RESTMapper
	// Policies lists BindingPolicies, for the check of a StatusCollector against the clauses
	// that name it; nil: StatusCollectors are not checked.
	Policies client.Reader
}

// reviews asks Access's Authorizer, once per distinct question, for one requester.
type reviews struct {
	a    Access
	user authenticationv1.UserInfo
	seen map[authorizationv1.ResourceAttributes]bool
}

func (a Access) requester(ctx context.Context) (*reviews, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("the requester is unknown (no admission request)")
	}
	return &reviews{a: a, user: req.UserInfo, seen: map[authorizationv1.ResourceAttributes]bool{}}, nil
}

func (r *reviews) allowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, error) {
	if ok, done := r.seen[attrs]; done {
		return ok, nil
	}
	ok, err := r.a.Authorizer.Allowed(ctx, r.user, attrs)
	if err != nil {
		return false, err
	}
	r.seen[attrs] = ok
	return ok, nil
}

func (r *reviews) name() string {
	if r.user.Username == "" {
		return "the requester"
	}
	return r.user.Username
}

// AggregationPolicy refuses p unless the requester may patch the status subresource of the
// target kind cluster-wide: statusfold writes the policy's result into the `.status` of every
// object of that kind that a BindingPolicy returns status for, in every namespace.
func (a Access) AggregationPolicy(ctx context.Context, p *policyv1alpha1.AggregationPolicy) (field.ErrorList, []string) {
	path := field.NewPath("spec", "target")
	r, err := a.requester(ctx)
	if err != nil {
		return field.ErrorList{field.Forbidden(path, err.Error())}, nil
	}
	gk := schema.GroupKind{Group: p.Spec.Target.Group, Kind: p.Spec.Target.Kind}
	resource, warnings := a.resource(gk)
	group := gk.Group
	if group == "" {
		group = "the core group"
	}
	need := fmt.Sprintf("needs patch on %s/status in %s cluster-wide", resource, group)
	ok, err := r.allowed(ctx, authorizationv1.ResourceAttributes{Group: gk.Group, Resource: resource,
		Subresource: "status", Verb: "patch"})
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(path, fmt.Errorf("this policy %s; asking whether %s may: %w", need, r.name(), err))}, warnings
	case !ok:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"statusfold writes this policy's result into the .status of every %s that a BindingPolicy returns status for, in every namespace, so creating or changing it %s: %s may not",
			gk.Kind, need, r.name()))}, warnings
	}
	return nil, warnings
}

// resource is the resource of gk: from the Mapper, else the lowercase plural guessed from the
// kind, with a warning that says so.
func (a Access) resource(gk schema.GroupKind) (string, []string) {
	var err error = &meta.NoKindMatchError{GroupKind: gk}
	if a.Mapper != nil {
		var m *meta.RESTMapping
		if m, err = a.Mapper.RESTMapping(gk); err == nil {
			return m.Resource.Resource, nil
		}
	}
	guess, _ := meta.UnsafeGuessKindToResource(gk.WithVersion(""))
	return guess.Resource, []string{fmt.Sprintf(
		"spec.target: the apiserver does not resolve %s (%v); the requester's permission was checked on the guessed resource %q",
		gk, err, guess.Resource)}
}

// BindingPolicy refuses bp when a clause that names statusCollectors can select Secrets or
// ConfigMaps (resources naming them, "*" or none, in the core group or any group) and the
// requester may not get and list them in every namespace the clause can match: statusfold would
// put what the collectors read from them into CombinedStatus objects that others may read.
func (a Access) BindingPolicy(ctx context.Context, bp *controlv1alpha1.BindingPolicy) (field.ErrorList, []string) {
	var errs field.ErrorList
	r := &lazyReviews{a: a}
	for i := range bp.Spec.Downsync {
		if err := r.clause(ctx, &bp.Spec.Downsync[i], field.NewPath("spec", "downsync").Index(i), ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// StatusCollector refuses sc when a BindingPolicy names it in a clause that the requester could
// not have written with it (BindingPolicy): whoever changes a collector changes what is copied
// from the Secrets and ConfigMaps those clauses select. Checked at create and at every change
// of spec; without Policies, nothing is checked.
func (a Access) StatusCollector(ctx context.Context, sc *controlv1alpha1.StatusCollector) (field.ErrorList, []string) {
	if a.Policies == nil {
		return nil, nil
	}
	var l controlv1alpha1.BindingPolicyList
	if err := a.Policies.List(ctx, &l); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("listing the BindingPolicies that name this collector: %w", err))}, nil
	}
	var errs field.ErrorList
	r := &lazyReviews{a: a}
	for _, bp := range l.Items {
		for i := range bp.Spec.Downsync {
			clause := &bp.Spec.Downsync[i]
			if !slices.Contains(clause.StatusCollectors, sc.Name) {
				continue
			}
			via := fmt.Sprintf("BindingPolicy %s spec.downsync[%d] names this collector and ", bp.Name, i)
			if err := r.clause(ctx, clause, field.NewPath("spec"), via); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs, nil
}

// lazyReviews are the reviews of one requester, made when a clause first needs them.
type lazyReviews struct {
	a Access
	r *reviews
}

// clause reviews one clause (nil: nothing to review), reporting at path; via, when not empty,
// says how the object under review reaches the clause.
func (l *lazyReviews) clause(ctx context.Context, clause *controlv1alpha1.DownsyncPolicyClause, path *field.Path, via string) *field.Error {
	selected := confidentialSelected(clause.DownsyncObjectTest)
	if len(selected) == 0 || len(clause.StatusCollectors) == 0 {
		return nil
	}
	if l.r == nil {
		var err error
		if l.r, err = l.a.requester(ctx); err != nil {
			return field.Forbidden(path, err.Error())
		}
	}
	for _, sel := range selected {
		if err := l.r.clause(ctx, path, sel, clauseNamespaces(clause.Namespaces), via); err != nil {
			return err
		}
	}
	return nil
}

// clause reviews get and list on one confidential resource in namespaces ("" is cluster-wide) and
// returns the clause's error, or nil.
func (r *reviews) clause(ctx context.Context, path *field.Path, sel selection, namespaces []string, via string) *field.Error {
	var denied []string
	for _, ns := range namespaces {
		for _, verb := range []string{"get", "list"} {
			ok, err := r.allowed(ctx, authorizationv1.ResourceAttributes{Namespace: ns, Resource: sel.resource, Verb: verb})
			if err != nil {
				return field.InternalError(path, fmt.Errorf("asking whether %s may %s %s: %w", r.name(), verb, sel.resource, err))
			}
			if !ok {
				denied = append(denied, ns)
				break
			}
		}
	}
	if len(denied) == 0 {
		return nil
	}
	scope := "cluster-wide"
	switch {
	case len(denied) == 1 && denied[0] != "":
		scope = "in namespace " + denied[0]
	case denied[0] != "":
		scope = "in namespaces " + strings.Join(denied, ", ")
	}
	return field.Forbidden(path, fmt.Sprintf(
		"%sselects %s (%s) and names statusCollectors, so statusfold would put what the collectors read from %s into CombinedStatus objects; that needs get and list on %s %s: %s may not",
		via, sel.kinds, sel.how, sel.kinds, sel.resource, scope, r.name()))
}

// selection is one confidential resource a clause can select, and how.
type selection struct {
	resource, kinds, how string
}

// confidentialResources are the core resources whose content is reviewed: Secrets, and ConfigMaps,
// which often carry credentials too (docs/security.md, "Requester checks").
var confidentialResources = []struct{ resource, kinds string }{{"secrets", "Secrets"}, {"configmaps", "ConfigMaps"}}

// confidentialSelected lists the confidential resources a clause can select (none: nil).
func confidentialSelected(t controlv1alpha1.DownsyncObjectTest) []selection {
	if t.APIGroup != nil && *t.APIGroup != "" {
		return nil
	}
	var out []selection
	for _, c := range confidentialResources {
		if how := resourceSelected(t.Resources, c.resource); how != "" {
			out = append(out, selection{resource: c.resource, kinds: c.kinds, how: how})
		}
	}
	return out
}

// resourceSelected says how a clause's resources select resource ("" when they do not).
func resourceSelected(resources []string, resource string) string {
	if len(resources) == 0 {
		return "no resources, which matches every resource"
	}
	for _, res := range resources {
		switch strings.ToLower(res) {
		case resource:
			return fmt.Sprintf("resources: [%q]", resource)
		case "*":
			return `resources: ["*"]`
		}
	}
	return ""
}

// clauseNamespaces are the namespaces to review for a clause's `namespaces`: [""] (cluster-wide)
// when it matches every namespace or lists more than MaxNamespaceReviews, else the distinct names.
func clauseNamespaces(listed []string) []string {
	if len(listed) == 0 || slices.Contains(listed, "*") {
		return []string{""}
	}
	names := slices.Clone(listed)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > MaxNamespaceReviews {
		return []string{""}
	}
	return names
}

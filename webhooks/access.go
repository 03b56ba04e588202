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

// BindingPolicy refuses bp when a clause that names statusCollectors can select Secrets
// (resources "secrets", "*" or none, in the core group or any group) and the requester may not
// get and list Secrets in every namespace the clause can match: statusfold would put what the
// collectors read from those Secrets into CombinedStatus objects that others may read.
func (a Access) BindingPolicy(ctx context.Context, bp *controlv1alpha1.BindingPolicy) (field.ErrorList, []string) {
	var errs field.ErrorList
	var r *reviews
	for i := range bp.Spec.Downsync {
		clause, path := &bp.Spec.Downsync[i], field.NewPath("spec", "downsync").Index(i)
		how := secretsSelected(clause.DownsyncObjectTest)
		if how == "" || len(clause.StatusCollectors) == 0 {
			continue
		}
		if r == nil {
			var err error
			if r, err = a.requester(ctx); err != nil {
				return field.ErrorList{field.Forbidden(path, err.Error())}, nil
			}
		}
		if err := r.clause(ctx, path, how, clauseNamespaces(clause.Namespaces)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// clause reviews get and list on Secrets in namespaces ("" is cluster-wide) and returns the
// clause's error, or nil.
func (r *reviews) clause(ctx context.Context, path *field.Path, how string, namespaces []string) *field.Error {
	var denied []string
	for _, ns := range namespaces {
		for _, verb := range []string{"get", "list"} {
			ok, err := r.allowed(ctx, authorizationv1.ResourceAttributes{Namespace: ns, Resource: "secrets", Verb: verb})
			if err != nil {
				return field.InternalError(path, fmt.Errorf("asking whether %s may %s secrets: %w", r.name(), verb, err))
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
		"selects Secrets (%s) and names statusCollectors, so statusfold would put what the collectors read from Secrets into CombinedStatus objects; that needs get and list on secrets %s: %s may not",
		how, scope, r.name()))
}

// secretsSelected says how a clause can select Secrets ("" when it cannot).
func secretsSelected(t controlv1alpha1.DownsyncObjectTest) string {
	if t.APIGroup != nil && *t.APIGroup != "" {
		return ""
	}
	if len(t.Resources) == 0 {
		return "no resources, which matches every resource"
	}
	for _, res := range t.Resources {
		switch strings.ToLower(res) {
		case "secrets":
			return `resources: ["secrets"]`
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

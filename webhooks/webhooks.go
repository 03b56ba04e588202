package webhooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/webhooks/check"
)

// +kubebuilder:rbac:groups=control.kubestellar.io,resources=statuscollectors,verbs=get
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindingpolicies,verbs=get;list;watch

// The URL paths the webhooks are served at (the manifests in config/webhook use them).
const (
	PathValidateStatusCollector   = "/validate-control-kubestellar-io-v1alpha1-statuscollector"
	PathMutateStatusCollector     = "/mutate-control-kubestellar-io-v1alpha1-statuscollector"
	PathValidateContentClassifier = "/validate-control-kubestellar-io-v1alpha1-contentclassifier"
	PathValidateBindingPolicy     = "/validate-control-kubestellar-io-v1alpha1-bindingpolicy"
	PathValidateAggregationPolicy = "/validate-policy-statusfold-dev-v1alpha1-aggregationpolicy"
)

// The webhooks' names, which the apiserver puts into a denial's message ("admission webhook
// "vstatuscollector.statusfold.dev" denied the request: ...").
const (
	NameValidateStatusCollector   = "vstatuscollector.statusfold.dev"
	NameMutateStatusCollector     = "mstatuscollector.statusfold.dev"
	NameValidateContentClassifier = "vcontentclassifier.statusfold.dev"
	NameValidateBindingPolicy     = "vbindingpolicy.statusfold.dev"
	NameValidateAggregationPolicy = "vaggregationpolicy.statusfold.dev"
)

// CheckDeadline bounds a validating webhook's check (lookups, compilation, examples), well
// under the webhook's timeout (TimeoutSeconds), so that the client gets statusfold's denial
// rather than the apiserver's "context deadline exceeded". An AggregationPolicy's compilation
// and examples have their own, shorter bound of 2 s (policy/aggregation.ValidatePolicyContext).
const CheckDeadline = 5 * time.Second

// DefaultSchemaRecheck is how often, at most, the webhooks look for changed OpenAPI schemas.
const DefaultSchemaRecheck = 10 * time.Second

// Options configures Setup. The zero value is ready to use.
type Options struct {
	// SchemaRecheck is how often, at most, the apiserver's list of OpenAPI documents is read
	// to see whether a schema changed (a changed document is fetched again; an unchanged one,
	// and the typed CEL environment built from it, is reused); 0 means DefaultSchemaRecheck.
	SchemaRecheck time.Duration
	// DisableSchemaChecks turns off the warnings that need OpenAPI schemas.
	DisableSchemaChecks bool
	// Collectors overrides where BindingPolicy checks find StatusCollectors; nil means live
	// reads (not the manager's cache: a BindingPolicy applied right after its collectors, as
	// `kubectl apply -f dir` does, must see them).
	Collectors check.CollectorGetter
	// BuiltinCerts, when set, makes Setup create the serving certificate with a certs.Rotator
	// (built-in CA, Secret, caBundle injection, rotation) and add the rotator to the manager.
	// Its CertDir must be the webhook server's cert dir (webhook.Options.CertDir; "" means
	// controller-runtime's default), where controller-runtime's certificate watcher picks up
	// each rotation; webhook configurations default to ours. Leave it nil with cert-manager
	// (config/certmanager), or when the server's TLSOpts already use a Rotator.
	BuiltinCerts *certs.Options
	// BuiltinCertsCluster, when set with BuiltinCerts, reaches the cluster that holds the
	// certificates' Secret when it is not the manager's (a WDS that is another apiserver: the
	// Secret stays in the hosting cluster, beside the pods); the webhook configurations that get
	// the CA bundle are then the manager's cluster's.
	BuiltinCertsCluster *rest.Config
	// Authorizer answers the requester checks of AggregationPolicies and BindingPolicies
	// (access.go); nil means SubjectAccessReviews with the manager's identity.
	Authorizer Authorizer
}

// Setup registers the webhooks with mgr's webhook server (and, with BuiltinCerts, provides the
// server's certificate). It returns after the first certificate check, so call it before
// mgr.Start.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.BuiltinCerts != nil {
		bopts := *opts.BuiltinCerts
		secrets, err := secretsClient(mgr, opts.BuiltinCertsCluster, &bopts)
		if err != nil {
			return err
		}
		if _, err := setupBuiltinCerts(mgr, secrets, bopts); err != nil {
			return err
		}
	}
	c, err := NewChecker(mgr, opts)
	if err != nil {
		return err
	}
	authz := opts.Authorizer
	if authz == nil {
		cs, err := authorizationv1client.NewForConfig(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("webhooks: authorization client: %w", err)
		}
		authz = SARAuthorizer(cs.SubjectAccessReviews())
	}
	return Register(mgr, c, Access{Authorizer: authz, Mapper: mgr.GetRESTMapper(), Policies: mgr.GetClient()})
}

// SetupBuiltinCerts creates a certs.Rotator that writes into the webhook server's cert dir and
// injects the CA bundle into statusfold's webhook configurations, and adds it to mgr.
func SetupBuiltinCerts(mgr ctrl.Manager, opts certs.Options) (*certs.Rotator, error) {
	return setupBuiltinCerts(mgr, nil, opts)
}

// secretsClient is a client of cluster (nil when cluster is nil: the manager's), and sets
// opts.ConfigurationsClient to a direct client of the manager's cluster in that case.
func secretsClient(mgr ctrl.Manager, cluster *rest.Config, opts *certs.Options) (client.Client, error) {
	if cluster == nil {
		return nil, nil
	}
	secrets, err := client.New(cluster, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("webhooks: certificates' cluster: %w", err)
	}
	if opts.ConfigurationsClient, err = client.New(mgr.GetConfig(), client.Options{}); err != nil {
		return nil, err
	}
	return secrets, nil
}

// setupBuiltinCerts is SetupBuiltinCerts with the Secret read and written by secrets (nil: a
// direct client of the manager's cluster).
func setupBuiltinCerts(mgr ctrl.Manager, secrets client.Client, opts certs.Options) (*certs.Rotator, error) {
	if opts.CertDir == "" {
		opts.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if len(opts.ValidatingWebhookConfigurations) == 0 && len(opts.MutatingWebhookConfigurations) == 0 {
		opts.ValidatingWebhookConfigurations = []string{ValidatingConfigurationName}
		opts.MutatingWebhookConfigurations = []string{MutatingConfigurationName}
	}
	if secrets == nil {
		direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return nil, err
		}
		secrets = direct
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rot, err := certs.New(ctx, secrets, opts)
	if err != nil {
		return nil, fmt.Errorf("webhooks: certificates: %w", err)
	}
	return rot, mgr.Add(rot)
}

// NewChecker builds the Checker that Setup uses, with lookups backed by mgr: StatusCollectors
// are read live, BindingPolicies from the manager's cache, schemas from /openapi/v3 discovery.
// The live reads use a client without client-side rate limiting: a burst of admissions must not
// queue behind the throttle (the webhook's timeout is 10 s).
func NewChecker(mgr ctrl.Manager, opts Options) (*check.Checker, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.RateLimiter = -1, nil
	live, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("webhooks: client: %w", err)
	}
	co := check.Options{Collectors: opts.Collectors, Mapper: mgr.GetRESTMapper(), Policies: ClientPolicies(mgr.GetClient())}
	if co.Collectors == nil {
		co.Collectors = ClientCollectors(live)
	}
	if !opts.DisableSchemaChecks {
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("webhooks: discovery client: %w", err)
		}
		ttl := opts.SchemaRecheck
		if ttl == 0 {
			ttl = DefaultSchemaRecheck
		}
		co.Schemas = check.NewDiscoverySchemas(disc.OpenAPIV3(), ttl)
	}
	return check.New(co)
}

// Register registers the webhooks, with the given Checker and requester checks, with mgr's
// webhook server.
func Register(mgr ctrl.Manager, c *check.Checker, access Access) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &controlv1alpha1.StatusCollector{}).
		WithValidator(NewStatusCollectorValidator(c).WithAccess(access.StatusCollector)).Complete(); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(PathMutateStatusCollector, NewStatusCollectorDefaulting(mgr.GetScheme()))
	if err := ctrl.NewWebhookManagedBy(mgr, &controlv1alpha1.ContentClassifier{}).
		WithValidator(NewContentClassifierValidator(c)).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlv1alpha1.BindingPolicy{}).
		WithValidator(NewBindingPolicyValidator(c).WithAccess(access.BindingPolicy)).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.AggregationPolicy{}).
		WithValidator(NewAggregationPolicyValidator(c).WithAccess(access.AggregationPolicy)).Complete()
}

// ClientCollectors finds StatusCollectors with a controller-runtime client.
func ClientCollectors(c client.Reader) check.CollectorGetter {
	return check.CollectorGetterFunc(func(ctx context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
		sc := &controlv1alpha1.StatusCollector{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
			return nil, err
		}
		return sc, nil
	})
}

// ClientPolicies lists BindingPolicies with a controller-runtime client.
func ClientPolicies(c client.Reader) check.PolicyLister {
	return check.PolicyListerFunc(func(ctx context.Context) ([]controlv1alpha1.BindingPolicy, error) {
		var l controlv1alpha1.BindingPolicyList
		if err := c.List(ctx, &l); err != nil {
			return nil, err
		}
		return l.Items, nil
	})
}

// Validator is a validating webhook for one kind: it runs a check and rejects the object with
// an Invalid status error (kubectl prints `The StatusCollector "x" is invalid: ...` and every
// field error) when the check finds errors; warnings always reach the client.
//
// Before the check, the handler refuses an object that breaks a limit of the CRD schema
// (limits.go): a request sent straight to the webhook port has not been through the schema.
// The check runs under the request's context bounded by CheckDeadline.
type Validator[T client.Object] struct {
	kind     string
	gv       schema.GroupVersion // zero: control.kubestellar.io/v1alpha1
	limits   func(T) field.ErrorList
	check    func(context.Context, T) (field.ErrorList, []string)
	spec     func(T) any
	deadline time.Duration // zero: CheckDeadline
	// access, when set, checks that the requester may do what the object makes statusfold do
	// (access.go); it runs after check, under the same deadline.
	access func(context.Context, T) (field.ErrorList, []string)
}

// WithAccess makes v also run f, a check of the requester (Access), at create and spec update.
func (v *Validator[T]) WithAccess(f func(context.Context, T) (field.ErrorList, []string)) *Validator[T] {
	v.access = f
	return v
}

// NewStatusCollectorValidator rejects collectors with any error of the collector compiler.
func NewStatusCollectorValidator(c *check.Checker) *Validator[*controlv1alpha1.StatusCollector] {
	return &Validator[*controlv1alpha1.StatusCollector]{kind: "StatusCollector",
		limits: StatusCollectorLimits, check: c.StatusCollector,
		spec: func(sc *controlv1alpha1.StatusCollector) any { return sc.Spec }}
}

// NewContentClassifierValidator rejects classifiers that break a rule of docs/rules.md "ContentClassifier".
func NewContentClassifierValidator(c *check.Checker) *Validator[*controlv1alpha1.ContentClassifier] {
	return &Validator[*controlv1alpha1.ContentClassifier]{kind: "ContentClassifier", limits: ContentClassifierLimits,
		check: func(_ context.Context, cc *controlv1alpha1.ContentClassifier) (field.ErrorList, []string) {
			return c.ContentClassifier(cc)
		},
		spec: func(cc *controlv1alpha1.ContentClassifier) any { return cc.Spec }}
}

// NewBindingPolicyValidator rejects policies with shape errors and warns about their collectors.
func NewBindingPolicyValidator(c *check.Checker) *Validator[*controlv1alpha1.BindingPolicy] {
	return &Validator[*controlv1alpha1.BindingPolicy]{kind: "BindingPolicy", check: c.BindingPolicy,
		spec: func(bp *controlv1alpha1.BindingPolicy) any { return bp.Spec }}
}

// NewAggregationPolicyValidator rejects aggregation policies whose Rego does not compile, lacks
// the required rule, or fails its examples.
func NewAggregationPolicyValidator(c *check.Checker) *Validator[*policyv1alpha1.AggregationPolicy] {
	return &Validator[*policyv1alpha1.AggregationPolicy]{kind: "AggregationPolicy", gv: policyv1alpha1.GroupVersion,
		limits: AggregationPolicyLimits,
		check: func(ctx context.Context, p *policyv1alpha1.AggregationPolicy) (field.ErrorList, []string) {
			return c.AggregationPolicy(ctx, p)
		},
		spec: func(p *policyv1alpha1.AggregationPolicy) any { return p.Spec }}
}

var _ admission.Validator[*controlv1alpha1.StatusCollector] = (*Validator[*controlv1alpha1.StatusCollector])(nil)

// ValidateCreate checks the schema's limits, then runs the check.
func (v *Validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	if errs := v.checkLimits(obj); len(errs) > 0 {
		return v.verdict(obj, errs, nil)
	}
	errs, warnings := v.bounded(ctx, obj)
	return v.verdict(obj, errs, warnings)
}

// ValidateUpdate checks the schema's limits, then runs the check; when the spec did not change,
// the check's errors do not reject the update (the limits' do: the apiserver would not have
// stored such an object).
func (v *Validator[T]) ValidateUpdate(ctx context.Context, old, obj T) (admission.Warnings, error) {
	if errs := v.checkLimits(obj); len(errs) > 0 {
		return v.verdict(obj, errs, nil)
	}
	errs, warnings := v.bounded(ctx, obj)
	if equality.Semantic.DeepEqual(v.spec(old), v.spec(obj)) && old.GetName() == obj.GetName() {
		errs = nil
	}
	return v.verdict(obj, errs, warnings)
}

func (v *Validator[T]) checkLimits(obj T) field.ErrorList {
	if v.limits == nil {
		return nil
	}
	return v.limits(obj)
}

// bounded runs the check under ctx bounded by the Validator's deadline, whose expiry is named
// in the errors of a check that stops on it (the aggregation engine's).
func (v *Validator[T]) bounded(ctx context.Context, obj T) (field.ErrorList, []string) {
	d := v.deadline
	if d == 0 {
		d = CheckDeadline
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf(
		"the admission check took more than %s (the webhook's timeout is %ds)", d, TimeoutSeconds))
	defer cancel()
	errs, warnings := v.check(ctx, obj)
	if v.access != nil {
		aerrs, awarnings := v.access(ctx, obj)
		errs, warnings = append(errs, aerrs...), append(warnings, awarnings...)
	}
	return errs, warnings
}

// ValidateDelete admits every deletion.
func (v *Validator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator[T]) verdict(obj T, errs field.ErrorList, warnings []string) (admission.Warnings, error) {
	if len(errs) == 0 {
		return warnings, nil
	}
	gv := v.gv
	if gv.Empty() {
		gv = controlv1alpha1.GroupVersion
	}
	return warnings, apierrors.NewInvalid(gv.WithKind(v.kind).GroupKind(), obj.GetName(), errs)
}

// NewStatusCollectorDefaulting is the defaulting webhook of StatusCollector: StatusCollectorDefaulter
// behind controller-runtime's defaulting handler (which answers with a JSON patch), except that
// an object that does not decode into the Go type — a schema-level mistake such as a number
// where an expression belongs — is admitted unchanged. The apiserver runs mutating admission
// before it validates the object against the CRD's schema, so a decoding error from here would
// hide the schema's message, which names the field ("spec.combinedFields[0].subject: Invalid
// value: "integer": ... must be of type string"); that validation rejects the object right after.
func NewStatusCollectorDefaulting(scheme *runtime.Scheme) *admission.Webhook {
	wh := admission.WithDefaulter[*controlv1alpha1.StatusCollector](scheme, StatusCollectorDefaulter{},
		admission.DefaulterRemoveUnknownOrOmitableFields)
	decoder, next := admission.NewDecoder(scheme), wh.Handler
	wh.Handler = admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Delete && decoder.Decode(req, &controlv1alpha1.StatusCollector{}) != nil {
			return admission.Allowed("left to the schema's validation: the object does not decode")
		}
		return next.Handle(ctx, req)
	})
	return wh
}

// StatusCollectorDefaulter defaults StatusCollectors (see NewStatusCollectorDefaulting).
type StatusCollectorDefaulter struct{}

var _ admission.Defaulter[*controlv1alpha1.StatusCollector] = StatusCollectorDefaulter{}

// Default sets `spec.limit` to 20 when it is 0 or omitted.
func (StatusCollectorDefaulter) Default(_ context.Context, sc *controlv1alpha1.StatusCollector) error {
	if sc.Spec.Limit == 0 {
		sc.Spec.Limit = controlv1alpha1.DefaultLimit
	}
	return nil
}

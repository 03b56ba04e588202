package webhooks

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// Names of statusfold's webhook configurations and, in a cluster, of the Service in front of
// the webhook server (config/webhook).
const (
	ValidatingConfigurationName = "statusfold-validating-webhook-configuration"
	MutatingConfigurationName   = "statusfold-mutating-webhook-configuration"
	ServiceName                 = "statusfold-webhook-service"
	DefaultNamespace            = "statusfold-system"
	// TimeoutSeconds is each webhook's timeout: admission of our kinds needs no slow lookups.
	TimeoutSeconds = 10
)

// SpecChangedCondition is the CEL expression of the webhooks' matchCondition: the apiserver calls
// a webhook for a CREATE, and for an UPDATE only when `spec` changed (oldObject is null on
// CREATE). Metadata-only updates — KubeStellar's own label writes on BindingPolicies, finalizer
// removals — then do not depend on the webhook being up; the handlers admit them anyway
// (Validator.ValidateUpdate).
const SpecChangedCondition = "request.operation == 'CREATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"

// matchConditions are the webhooks' matchConditions (SpecChangedCondition).
func matchConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{Name: "spec-changed", Expression: SpecChangedCondition}}
}

// ClientConfigFunc makes a webhook's client config for a URL path.
type ClientConfigFunc func(path string) admissionregistrationv1.WebhookClientConfig

// ServiceClientConfig points webhooks at a Service (in a cluster; port 443).
func ServiceClientConfig(namespace, name string) ClientConfigFunc {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: name, Path: ptr.To(path)}}
	}
}

// URLClientConfig points webhooks at base+path, e.g. "https://127.0.0.1:9443" in local mode.
func URLClientConfig(base string, caBundle []byte) ClientConfigFunc {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: caBundle}
	}
}

// Configurations returns statusfold's webhook configurations (the same as config/webhook, which
// a test keeps in step), with each webhook's client config made by clientConfig. failurePolicy
// is Fail: our kinds are not admitted unchecked while the webhook is down.
func Configurations(clientConfig ClientConfigFunc) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	rule := func(group, resource string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1alpha1"},
				Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.ClusterScope)},
		}}
	}
	validating := func(name, path, group, resource string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name, ClientConfig: clientConfig(path), Rules: rule(group, resource),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         matchConditions(),
		}
	}
	control := controlv1alpha1.GroupVersion.Group
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating(NameValidateStatusCollector, PathValidateStatusCollector, control, controlv1alpha1.ResourceStatusCollectors),
			validating(NameValidateContentClassifier, PathValidateContentClassifier, control, controlv1alpha1.ResourceContentClassifiers),
			validating(NameValidateBindingPolicy, PathValidateBindingPolicy, control, controlv1alpha1.ResourceBindingPolicies),
			validating(NameValidateAggregationPolicy, PathValidateAggregationPolicy,
				policyv1alpha1.GroupVersion.Group, policyv1alpha1.ResourceAggregationPolicies),
		},
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: NameMutateStatusCollector, ClientConfig: clientConfig(PathMutateStatusCollector),
			Rules:                   rule(control, controlv1alpha1.ResourceStatusCollectors),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			MatchConditions:         matchConditions(),
		}},
	}
	return v, m
}

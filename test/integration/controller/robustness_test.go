package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks/check"
)

// panickingSchemas is the WDS's schema resolver with a panic injected for one kind: every
// evaluation that returns status into an object of that kind panics.
type panickingSchemas struct {
	resolver.SchemaResolver
	kind string
}

func (p panickingSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk.Kind == p.kind {
		panic("injected panic for " + gvk.Kind)
	}
	return p.SchemaResolver.ResolveSchema(gvk)
}

// TestPanicInOneEvaluation: an evaluation that panics does not end the manager: it is retried
// with backoff and reported (log at default verbosity, Event, metric), and every other object is
// still served.
func TestPanicInOneEvaluation(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	// The real resolver of the WDS's schemas, as Setup builds it by default.
	real := checkSchemas(t, cp)
	panicsBefore := counter(t, "statusfold_errors_total", "where", "panic")
	logs := startLoggedManager(t, cp, cp.Config, aggregator.Options{Schemas: panickingSchemas{SchemaResolver: real, kind: "ReplicaSet"}})
	const ns = "panics"
	rs := replicaSet(t, c, ns, "rs", 2)
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy("panics", []string{"wec1"},
		clause("apps", "replicasets", ns, []string{"rs"}, singleton),
		clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet",
		Namespace: ns, Name: rs.Name}, map[string]any{"replicas": int64(2), "readyReplicas": int64(2)}, applied(1))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	expectReturn(t, c, d, "1", 3)
	expectEvent(t, c, ns, "rs", "ReconcileFailed", "injected panic")
	if n := counter(t, "statusfold_errors_total", "where", "panic"); n < panicsBefore+2 {
		t.Errorf("statusfold_errors_total{where=panic} = %v, want at least %v (retried)", n, panicsBefore+2)
	}
	if !strings.Contains(logs.String(), "injected panic for ReplicaSet") {
		t.Errorf("the panic is not in the log at default verbosity")
	}
	// Still serving after the panics: a new report reaches the Deployment.
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, 1), applied(1))
	expectReturn(t, c, d, "1", 1)
}

// checkSchemas is the resolver of the WDS's published schemas that Setup uses by default.
func checkSchemas(t *testing.T, cp *framework.ControlPlane) resolver.SchemaResolver {
	t.Helper()
	return check.NewDiscoverySchemas(cp.Discovery.OpenAPIV3(), 30*time.Second)
}

// managerIdentity is the user the manager runs as in a cluster: its ServiceAccount.
const managerIdentity = "system:serviceaccount:statusfold-system:statusfold-manager"

// TestFailuresVisible runs the manager with its real RBAC (config/rbac) and a kind whose status
// it is not allowed to write (an operator forgot to grant it): the failed write is visible at
// default verbosity — in the log, as an Event on the object and in statusfold_errors_total — and
// retried.
func TestFailuresVisible(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(testCRDs()))
	c := cp.Client
	applyManagerRBAC(t, cp)
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	asManager := rest.CopyConfig(cp.Config)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: managerIdentity}
	errsBefore := counter(t, "statusfold_errors_total", "where", "reconcile")
	logs := startLoggedManager(t, cp, asManager, aggregator.Options{})

	const ns = "visible"
	w := customObject(t, c, widgetGVK, ns, "w1")
	create(t, c, policy("visible", []string{"wec1"}, clause("example.com", "widgets", ns, []string{"w1"}, singleton)))
	report(t, c, "wec1", customRef(widgetGVK, "widgets", w), map[string]any{"phase": "Ready"}, applied(1))
	expectEvent(t, c, ns, "w1", "ReconcileFailed", "forbidden")
	eventually(t, "the failure in the log at default verbosity", func() error {
		if l := logs.String(); !strings.Contains(l, "ReconcileFailed") || !strings.Contains(l, "forbidden") {
			return fmt.Errorf("not logged")
		}
		return nil
	})
	if n := counter(t, "statusfold_errors_total", "where", "reconcile"); n <= errsBefore {
		t.Errorf("statusfold_errors_total{where=reconcile} = %v, not above %v", n, errsBefore)
	}
}

// unlistableCRD is a kind whose preferred version (v2) cannot be listed: the objects are stored
// in v1, and converting them needs a conversion webhook that nothing serves.
func unlistableCRD(t *testing.T, c client.Client) {
	t.Helper()
	utilruntime.Must(apiextensionsv1.AddToScheme(c.Scheme()))
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptr.To(true)}}}
	}
	url := "https://127.0.0.1:1/convert"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "brokens.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Broken", ListKind: "BrokenList", Plural: "brokens", Singular: "broken"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), version("v2", false)},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}}},
		},
	}
	create(t, c, crd)
	eventually(t, "CRD brokens.example.com established", func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}

// TestUnlistableResource: a resource whose list always fails (its conversion webhook is down)
// stalls nothing. A `"*"` policy that selects it still binds the other objects of its namespace,
// another policy's objects are served, and the failure is reported on the BindingPolicy.
func TestUnlistableResource(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	unlistableCRD(t, c)
	const ns, other = "unlistable", "unlistable-other"
	customObject(t, c, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Broken"}, ns, "b1")
	logs := startLoggedManager(t, cp, cp.Config, aggregator.Options{WatchSyncTimeout: 2 * time.Second})

	d := deployment(t, c, ns, "web", 3, nil)
	everything := policy("everything", []string{"wec1"})
	everything.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}, Namespaces: []string{ns}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true}}}
	create(t, c, everything)
	d2 := deployment(t, c, other, "api", 2, nil)
	create(t, c, policy("explicit", []string{"wec1"}, clause("apps", "deployments", other, []string{"api"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec1", deploymentRef(d2), deploymentStatus(2, 1, 1), applied(1))
	expectReturn(t, c, d2, "1", 1)
	expectReturn(t, c, d, "1", 3)
	expectEvent(t, c, "", "everything", "ResourceNotListed", "brokens")
	if !strings.Contains(logs.String(), "brokens") {
		t.Errorf("the unlistable resource is not named in the log at default verbosity")
	}
}

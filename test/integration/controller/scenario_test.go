package controller

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// widgetKind installs a user's CRD with a status subresource and, as docs/install.md says, the
// ClusterRole that lets statusfold write its status.
func widgetKind(t *testing.T, c client.Client) {
	t.Helper()
	preserve := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *preserve, "status": *preserve}}}}},
		},
	}
	// The test scheme lacks apiextensions: create and read the CRD as unstructured.
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	create(t, c, u, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "statusfold-status-writer-widgets", Labels: map[string]string{"statusfold.dev/aggregate-to-status-writer": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"patch"}}},
	})
	eventually(t, "CRD established", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: crd.Name}, u); err != nil {
			return err
		}
		var got apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}

// runScenario drives the scenario through the manager: Binding resolution (or, in external
// mode, Bindings written as another controller would), CombinedStatus, singleton return into a
// Deployment with a ContentClassifier pruning a field, multi-WEC return into a Deployment and a
// CRD kind, and the status of our own kinds.
func runScenario(t *testing.T, c client.Client, mode aggregator.BindingResolution) {
	t.Helper()
	const ns = "sa"
	single, multiD := scenarioObjects(t, c, ns, mode)

	st := deploymentStatus(3, 2, 1)
	st["terminatingReplicas"] = 1
	report(t, c, "wec1", deploymentRef(single), st, applied(1))
	report(t, c, "wec1", deploymentRef(multiD), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec2", deploymentRef(multiD), deploymentStatus(3, 1, 1), applied(1))
	wref := controlv1alpha1.SourceRef{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespace: ns, Name: "w"}
	report(t, c, "wec1", wref, map[string]any{"ready": 2, "phase": "Running"}, applied(1))
	report(t, c, "wec2", wref, map[string]any{"ready": 5, "phase": "Running"}, applied(1))

	expectScenarioSingleton(t, c, single)
	expectResult(t, c, multiD, "sa-multi", ns, "available-replicas-histogram", [][]string{{"1", "1"}, {"3", "1"}})
	expectReturn(t, c, multiD, "2", 1)
	expectScenarioWidget(t, c, ns)
	expectScenarioOwnKinds(t, c)
	expectCollectorsCondition(t, c, "sa-single", corev1.ConditionTrue, "")
}

// scenarioObjects makes the scenario's WECs, workload objects (two Deployments, returned, and a
// Widget), ContentClassifier and BindingPolicies — in external mode also their Bindings, as
// another controller would write them — and waits until the Bindings list the objects.
func scenarioObjects(t *testing.T, c client.Client, ns string, mode aggregator.BindingResolution) (single, multiD *appsv1.Deployment) {
	t.Helper()
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	single = deployment(t, c, ns, "single", 3, nil)
	multiD = deployment(t, c, ns, "multi", 3, nil)
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": "w"}, "spec": map[string]any{"size": 2}}}
	if err := c.Create(context.Background(), widget); err != nil {
		t.Fatal(err)
	}
	create(t, c,
		&controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "deployments.v1.apps"},
			Spec: controlv1alpha1.ContentClassifierSpec{DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "terminatingReplicas"}}}},
		policy("sa-single", []string{"wec1"}, clause("apps", "deployments", ns, []string{"single"}, singleton, collectors("count-wecs", "full-status"))),
		policy("sa-multi", []string{"wec1", "wec2"},
			clause("apps", "deployments", ns, []string{"multi"}, multi, collectors("available-replicas-histogram")),
			clause("example.com", "widgets", ns, []string{"w"}, multi)),
	)
	if mode == aggregator.BindingResolutionExternal {
		writeBinding(t, c, "sa-single", []string{"wec1"}, bindingEntry("apps", "deployments", ns, "single", false, "count-wecs", "full-status"))
		writeBinding(t, c, "sa-multi", []string{"wec1", "wec2"}, bindingEntry("apps", "deployments", ns, "multi", true, "available-replicas-histogram"),
			bindingEntry("example.com", "widgets", ns, "w", true))
	}
	bindingLists(t, c, "sa-single", ns, "single")
	bindingLists(t, c, "sa-multi", ns, "w")
	return single, multiD
}

// expectScenarioSingleton: the singleton Deployment's CombinedStatus results, and its returned
// copy without the field its ContentClassifier prunes.
func expectScenarioSingleton(t *testing.T, c client.Client, single *appsv1.Deployment) {
	t.Helper()
	ns := single.Namespace
	expectResult(t, c, single, "sa-single", ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, single, "sa-single", ns, "full-status", [][]string{{"wec1", jsonCell(t, deploymentStatus(3, 2, 1))}})
	expectReturn(t, c, single, "1", 2)
	eventually(t, "pruned field not copied", func() error {
		u, err := getObject(c, single, ns, "single")
		if err != nil {
			return err
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "terminatingReplicas"); found {
			return fmt.Errorf("status.terminatingReplicas was returned: %v", u.Object["status"])
		}
		return nil
	})
}

// expectScenarioWidget: the Widget (a CRD kind) gets the aggregate of both WECs' reports and the
// executing-count label.
func expectScenarioWidget(t *testing.T, c client.Client, ns string) {
	t.Helper()
	eventually(t, "Widget aggregate", func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "w"}, u); err != nil {
			return err
		}
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "ready")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if ready != 2 || phase != "Running" || u.GetLabels()[aggregator.LabelExecutingCount] != "2" {
			return fmt.Errorf("labels %v status %v", u.GetLabels(), u.Object["status"])
		}
		return nil
	})
}

// expectScenarioOwnKinds: our own kinds' status (the StatusCollector's and the
// ContentClassifier's observedGeneration).
func expectScenarioOwnKinds(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "StatusCollector and ContentClassifier status", func() error {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(ctx, client.ObjectKey{Name: "full-status"}, &sc); err != nil {
			return err
		}
		if sc.Status.ObservedGeneration != sc.Generation {
			return fmt.Errorf("StatusCollector status %+v", sc.Status)
		}
		var cc controlv1alpha1.ContentClassifier
		if err := c.Get(ctx, client.ObjectKey{Name: "deployments.v1.apps"}, &cc); err != nil {
			return err
		}
		if cc.Status.ObservedGeneration != cc.Generation {
			return fmt.Errorf("ContentClassifier status %+v", cc.Status)
		}
		return nil
	})
}

func bindingEntry(group, resource, ns, name string, multiWEC bool, collectorNames ...string) controlv1alpha1.NamespaceScopeDownsyncClause {
	e := controlv1alpha1.NamespaceScopeDownsyncClause{}
	e.Group, e.Version, e.Resource, e.Namespace, e.Name = group, "v1", resource, ns, name
	e.StatusCollectors = collectorNames
	e.WantSingletonReportedState = !multiWEC
	e.WantMultiWECReportedState = multiWEC
	return e
}

// writeBinding writes a Binding as KubeStellar's binding controller would (external mode).
func writeBinding(t *testing.T, c client.Client, name string, wecs []string, entries ...controlv1alpha1.NamespaceScopeDownsyncClause) {
	t.Helper()
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range wecs {
		b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterId: w})
	}
	b.Spec.Workload.NamespaceScope = entries
	create(t, c, b)
}

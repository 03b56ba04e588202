package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/test/framework"
)

// TestStatusRead: `statusfold status` reads, from a real apiserver, the object with its returned
// .status and executing-count label, each destination WEC's WorkStatus (a destination without one
// is "not yet"; another object's WorkStatus and another WDS's are left out) and the
// CombinedStatuses about the object (not those about another object), and reports exactly that.
func TestStatusRead(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	c := cp.Client
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"demo", "wec1", "wec2", "wec3"} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web",
		Labels: map[string]string{aggregator.LabelExecutingCount: "2"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	create(d)
	// The returned status: one of the two WECs is still rolling out.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	b.Spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
		GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "demo", Name: "web"}}}
	b.Spec.Destinations = []controlv1alpha1.Destination{{ClusterId: "wec1"}, {ClusterId: "wec2"}, {ClusterId: "wec3"}}
	create(b)

	updated := metav1.NewTime(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	workStatus := func(wec, origin, name string, status string) {
		t.Helper()
		ws := &controlv1alpha1.WorkStatus{
			ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: "deployments-demo-" + name, Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: origin}},
			Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments",
				Kind: "Deployment", Namespace: "demo", Name: name}},
			StatusDetails: controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true, LastCurrencyUpdateTime: updated},
		}
		create(ws)
		ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: []byte(status)}}
		if err := c.Status().Update(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	workStatus("wec1", "wds1", "web", `{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2}`)
	workStatus("wec2", "wds1", "web", `{"observedGeneration":1,"replicas":2,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}`)
	workStatus("wec3", "wds2", "web", `{"observedGeneration":1,"replicas":2}`)   // another WDS's
	workStatus("wec3", "wds1", "other", `{"observedGeneration":1,"replicas":9}`) // another object

	results := []controlv1alpha1.NamedStatusCombination{{Name: "count-wecs", ColumnNames: []string{"count"},
		Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeNumber, Number: ptr.To("2")}}}}}}
	combined := func(name, policy, object string) {
		t.Helper()
		create(&controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Labels: map[string]string{
			controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
			controlv1alpha1.LabelCombinedStatusNamespace: "demo", controlv1alpha1.LabelCombinedStatusName: object,
			controlv1alpha1.LabelCombinedStatusBindingPolicy: policy}}, Results: results})
	}
	combined("u2.p2", "zeta", "web")
	combined("u1.p1", "alpha", "web")
	combined("u3.p3", "alpha", "other")

	var want statusReport
	want.Object.Group, want.Object.Version, want.Object.Kind, want.Object.Resource = "apps", "v1", "Deployment", "deployments"
	want.Object.Namespace, want.Object.Name, want.Object.Generation = "demo", "web", 1
	want.ExecutingCount = "2"
	want.Health = &healthReport{Status: health.Progressing, Message: "Waiting for rollout to finish: 1 old replicas are pending termination..."}
	want.Status = map[string]any{"observedGeneration": 1, "replicas": 4, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
	want.WECs = []wecReport{
		{Name: "wec1", Reported: true, Health: &healthReport{Status: health.Healthy}, LastGeneration: 1, Applied: true, Updated: "2026-11-26T09:00:00Z"},
		{Name: "wec2", Reported: true, Health: &healthReport{Status: health.Progressing, Message: "Waiting for rollout to finish: 1 out of 2 new replicas have been updated..."},
			LastGeneration: 1, Applied: true, Updated: "2026-11-26T09:00:00Z"},
		{Name: "wec3"},
	}
	want.Combined = []combinedReport{{Name: "u1.p1", BindingPolicy: "alpha", Results: results}, {Name: "u2.p2", BindingPolicy: "zeta", Results: results}}

	out, err := runStatus(t, "deploy", "web", "-n", "demo", "-o", "json", "--kubeconfig", cp.Kubeconfig)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var got statusReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not the JSON report: %v\n%s", err, out)
	}
	// want through JSON too, so that numbers compare as the output's.
	wantJSON, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var wantDecoded statusReport
	if err := json.Unmarshal(wantJSON, &wantDecoded); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantDecoded) {
		t.Errorf("status report\n%s\nwant\n%s", out, wantJSON)
	}
}

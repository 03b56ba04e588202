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
	createStatusReadWorkload(t, ctx, cp.Client)
	results := createStatusReadReports(t, ctx, cp.Client)
	want := wantStatusReadReport(results)

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

// createStatusReadWorkload creates the namespaces demo, wec1, wec2 and wec3, the Deployment
// demo/web executing in 2 WECs with its returned status, and a Binding that sends it to the
// three WECs.
func createStatusReadWorkload(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	for _, ns := range []string{"demo", "wec1", "wec2", "wec3"} {
		mustCreate(t, ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	d := webDeployment(map[string]string{aggregator.LabelExecutingCount: "2"})
	mustCreate(t, ctx, c, d)
	// The returned status: one of the two WECs is still rolling out.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ctx, c, webBinding("web", "wec1", "wec2", "wec3"))
}

// createStatusReadReports creates the WorkStatuses (wec1 done, wec2 rolling out, and two that
// the report must leave out: another WDS's and another object's) and the CombinedStatuses (two
// about demo/web, one about another object), and returns the results every CombinedStatus holds.
func createStatusReadReports(t *testing.T, ctx context.Context, c client.Client) []controlv1alpha1.NamedStatusCombination {
	t.Helper()
	details := controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true,
		LastCurrencyUpdateTime: metav1.NewTime(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))}
	createWorkStatus(t, ctx, c, "wec1", "wds1", "web", details, `{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2}`)
	createWorkStatus(t, ctx, c, "wec2", "wds1", "web", details, `{"observedGeneration":1,"replicas":2,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}`)
	createWorkStatus(t, ctx, c, "wec3", "wds2", "web", details, `{"observedGeneration":1,"replicas":2}`)   // another WDS's
	createWorkStatus(t, ctx, c, "wec3", "wds1", "other", details, `{"observedGeneration":1,"replicas":9}`) // another object

	results := []controlv1alpha1.NamedStatusCombination{{Name: "count-wecs", ColumnNames: []string{"count"},
		Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeNumber, Number: ptr.To("2")}}}}}}
	combined := func(name, policy, object string) {
		t.Helper()
		mustCreate(t, ctx, c, &controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, Labels: map[string]string{
			controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
			controlv1alpha1.LabelCombinedStatusNamespace: "demo", controlv1alpha1.LabelCombinedStatusName: object,
			controlv1alpha1.LabelCombinedStatusBindingPolicy: policy}}, Results: results})
	}
	combined("u2.p2", "zeta", "web")
	combined("u1.p1", "alpha", "web")
	combined("u3.p3", "alpha", "other")
	return results
}

// wantStatusReadReport is the report TestStatusRead's objects must give, with results as every
// CombinedStatus's results.
func wantStatusReadReport(results []controlv1alpha1.NamedStatusCombination) statusReport {
	var want statusReport
	want.Object.Group, want.Object.Version, want.Object.Kind, want.Object.Resource = "apps", "v1", "Deployment", "deployments"
	want.Object.Namespace, want.Object.Name, want.Object.Generation = "demo", "web", 1
	want.ExecutingCount = "2"
	want.Rule, want.HealthCheck = "builtin/deployment.rego", "go"
	want.Health = &healthReport{Status: health.Progressing, Message: "Waiting for rollout to finish: 1 old replicas are pending termination..."}
	want.Status = map[string]any{"observedGeneration": 1, "replicas": 4, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
	want.WECs = []wecReport{
		{Name: "wec1", Reported: true, Health: &healthReport{Status: health.Healthy}, LastGeneration: 1, Applied: true, Updated: "2026-11-26T09:00:00Z"},
		{Name: "wec2", Reported: true, Health: &healthReport{Status: health.Progressing, Message: "Waiting for rollout to finish: 1 out of 2 new replicas have been updated..."},
			LastGeneration: 1, Applied: true, Updated: "2026-11-26T09:00:00Z"},
		{Name: "wec3"},
	}
	want.Combined = []combinedReport{{Name: "u1.p1", BindingPolicy: "alpha", Results: results}, {Name: "u2.p2", BindingPolicy: "zeta", Results: results}}
	return want
}

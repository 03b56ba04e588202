package wecsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/wecsim"
)

func simWEC(name string, role wecsim.Role, speed, leave int) wecsim.WEC {
	return wecsim.WEC{Name: name, Role: role, Speed: speed, LeaveTick: leave,
		Labels: map[string]string{wecsim.LabelName: name, wecsim.LabelRegion: "r-" + name}}
}

// TestRunnerWritesWorkStatusesLikeTheAgent drives the runner tick by tick against a real
// apiserver with a hand-written Binding.
func TestRunnerWritesWorkStatusesLikeTheAgent(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	c := cp.Client
	dep, binding := createBoundNginx(t, ctx, c)
	rt := newRunnerTest(t, ctx, cp)

	rt.step() // tick 0: every WEC registered, the Deployment applied everywhere
	rt.step() // tick 1: wec1 has 2 ready
	checkManagedClusterLabels(t, ctx, c)
	checkFirstReports(rt)

	rt.step() // tick 2: wec3 leaves
	if err := c.Get(ctx, client.ObjectKey{Name: "wec3"}, &clusterv1.ManagedCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("ManagedCluster wec3 after leaving: %v, want NotFound", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "wec3", Name: runnerTestWSName}, &controlv1alpha1.WorkStatus{}); !apierrors.IsNotFound(err) {
		t.Errorf("WorkStatus of wec3 after leaving: %v, want NotFound", err)
	}

	// A new generation in the WDS reaches the WECs; the WEC copy's generation follows.
	dep.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	if err := c.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	rt.step() // tick 3
	ws, st := rt.workStatus("wec1")
	if d := ws.StatusDetails; d.LastGeneration != 2 || d.WECGeneration == nil || *d.WECGeneration != 2 || st["observedGeneration"] != float64(2) {
		t.Errorf("after generation 2: statusDetails %+v, status %v", d, st)
	}

	// Unbinding deletes the WorkStatuses.
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	rt.step()
	var left controlv1alpha1.WorkStatusList
	if err := c.List(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d WorkStatuses left after the Binding was deleted", len(left.Items))
	}
}

// runnerTestWSName is the name of the WorkStatus of the Deployment demo/nginx in every mailbox.
const runnerTestWSName = "appsv1-deployment-demo-nginx"

// createBoundNginx creates the namespace demo, the Deployment demo/nginx (2 replicas) and the
// Binding nginx that sends it to wec1, wec2 and wec3, and returns the Deployment and the Binding.
func createBoundNginx(t *testing.T, ctx context.Context, c client.Client) (*appsv1.Deployment, *controlv1alpha1.Binding) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}); err != nil {
		t.Fatal(err)
	}
	replicas := int32(2)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "demo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	binding := &controlv1alpha1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: controlv1alpha1.BindingSpec{
			Workload: controlv1alpha1.DownsyncObjectClauses{NamespaceScope: []controlv1alpha1.NamespaceScopeDownsyncClause{{
				NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
					GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
					Namespace:            "demo", Name: "nginx",
				},
			}}},
			Destinations: []controlv1alpha1.Destination{{ClusterId: "wec1"}, {ClusterId: "wec2"}, {ClusterId: "wec3"}},
		},
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	return dep, binding
}

// runnerTest drives a Runner tick by tick, with a clock at t0 plus one second per tick.
type runnerTest struct {
	t    *testing.T
	ctx  context.Context
	c    client.Client
	r    *wecsim.Runner
	t0   time.Time
	tick int
}

// newRunnerTest is a runnerTest at tick 0 whose Runner, for the WDS wds-a, simulates wec1
// (healthy), wec2 (failing) and wec3 (leaving at tick 2).
func newRunnerTest(t *testing.T, ctx context.Context, cp *framework.ControlPlane) *runnerTest {
	rt := &runnerTest{t: t, ctx: ctx, c: cp.Client, t0: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	rt.r = &wecsim.Runner{
		WDS: cp.Client, Mapper: cp.RESTMapper, WDSName: "wds-a",
		Scenario: wecsim.Scenario{Seed: 1, LagTicks: 2, DeadlineTicks: 3, WECs: []wecsim.WEC{
			simWEC("wec1", wecsim.RoleHealthy, 2, -1),
			simWEC("wec2", wecsim.RoleFailing, 2, -1),
			simWEC("wec3", wecsim.RoleLeaving, 1, 2),
		}},
		Now: func() time.Time { return rt.t0.Add(time.Duration(rt.tick) * time.Second) },
	}
	return rt
}

// step runs one tick of the Runner, and fails the test when it fails.
func (rt *runnerTest) step() {
	rt.t.Helper()
	if err := rt.r.Step(rt.ctx, rt.tick); err != nil {
		rt.t.Fatalf("tick %d: %v", rt.tick, err)
	}
	rt.tick++
}

// workStatus reads the WorkStatus of the Deployment demo/nginx in wec's mailbox, and returns it
// with its status decoded.
func (rt *runnerTest) workStatus(wec string) (*controlv1alpha1.WorkStatus, map[string]any) {
	rt.t.Helper()
	ws := &controlv1alpha1.WorkStatus{}
	if err := rt.c.Get(rt.ctx, client.ObjectKey{Namespace: wec, Name: runnerTestWSName}, ws); err != nil {
		rt.t.Fatalf("WorkStatus %s/%s: %v", wec, runnerTestWSName, err)
	}
	var st map[string]any
	if err := json.Unmarshal(ws.Status.Raw, &st); err != nil {
		rt.t.Fatal(err)
	}
	return ws, st
}

// checkManagedClusterLabels checks that the three WECs are registered as ManagedClusters with
// their scenario labels.
func checkManagedClusterLabels(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	var mcs clusterv1.ManagedClusterList
	if err := c.List(ctx, &mcs); err != nil {
		t.Fatal(err)
	}
	gotLabels := map[string]map[string]string{}
	for _, mc := range mcs.Items {
		gotLabels[mc.Name] = mc.Labels
	}
	wantLabels := map[string]map[string]string{
		"wec1": {wecsim.LabelName: "wec1", wecsim.LabelRegion: "r-wec1"},
		"wec2": {wecsim.LabelName: "wec2", wecsim.LabelRegion: "r-wec2"},
		"wec3": {wecsim.LabelName: "wec3", wecsim.LabelRegion: "r-wec3"},
	}
	if !reflect.DeepEqual(gotLabels, wantLabels) {
		t.Errorf("ManagedClusters: %v, want %v", gotLabels, wantLabels)
	}
}

// checkFirstReports checks, after tick 1, wec1's WorkStatus (its source, WDS label, details and
// status: rolled out at tick 1) and wec2's status (failing: half the replicas ready).
func checkFirstReports(rt *runnerTest) {
	t := rt.t
	t.Helper()
	t0 := rt.t0
	ws, st := rt.workStatus("wec1")
	wantRef := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "demo", Name: "nginx"}
	if ws.Spec.SourceRef != wantRef {
		t.Errorf("sourceRef %+v, want %+v", ws.Spec.SourceRef, wantRef)
	}
	if got := ws.Labels[controlv1alpha1.LabelOriginWDSName]; got != "wds-a" {
		t.Errorf("originWdsName label %q, want wds-a", got)
	}
	if d := ws.StatusDetails; d.LastGeneration != 1 || !d.LastGenerationIsApplied || d.WECGeneration == nil || *d.WECGeneration != 1 {
		t.Errorf("statusDetails %+v, want lastGeneration 1, applied, wecGeneration 1", d)
	}
	if !ws.StatusDetails.LastCurrencyUpdateTime.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("lastCurrencyUpdateTime %v, want %v (the tick the status changed)", ws.StatusDetails.LastCurrencyUpdateTime, t0.Add(time.Second))
	}
	if st["readyReplicas"] != float64(2) || st["observedGeneration"] != float64(1) {
		t.Errorf("wec1 status %v, want readyReplicas 2, observedGeneration 1", st)
	}
	if _, st2 := rt.workStatus("wec2"); st2["readyReplicas"] != float64(1) {
		t.Errorf("failing wec2 status %v, want readyReplicas 1 (half of 2)", st2)
	}
}

// BenchmarkRunnerStep measures one tick against a real apiserver with 100 WECs and 2 bound
// Deployments (200 WorkStatuses): "first" creates every WorkStatus (reported as first-tick-ms),
// the loop is the steady state (one list, two object reads, no writes).
func BenchmarkRunnerStep(b *testing.B) {
	cp := framework.RunControlPlane(b)
	ctx := context.Background()
	c := cp.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}); err != nil {
		b.Fatal(err)
	}
	sc := wecsim.Scenario{Seed: 1, LagTicks: 2, DeadlineTicks: 3}
	var dests []controlv1alpha1.Destination
	for i := range 100 {
		w := simWEC(fmt.Sprintf("w%03d", i), wecsim.RoleHealthy, 3, -1)
		sc.WECs = append(sc.WECs, w)
		dests = append(dests, controlv1alpha1.Destination{ClusterId: w.Name})
	}
	var clauses []controlv1alpha1.NamespaceScopeDownsyncClause
	for _, name := range []string{"a", "b"} {
		replicas := int32(3)
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
				},
			},
		}
		if err := c.Create(ctx, dep); err != nil {
			b.Fatal(err)
		}
		clauses = append(clauses, controlv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
				Namespace:            "demo", Name: name,
			},
		})
	}
	if err := c.Create(ctx, &controlv1alpha1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: controlv1alpha1.BindingSpec{
			Workload:     controlv1alpha1.DownsyncObjectClauses{NamespaceScope: clauses},
			Destinations: dests,
		},
	}); err != nil {
		b.Fatal(err)
	}
	r := &wecsim.Runner{WDS: c, Mapper: cp.RESTMapper, WDSName: "wds1", Scenario: sc}
	start := time.Now()
	if err := r.Step(ctx, 0); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	tick := 1
	for ; tick < 3; tick++ { // the rollouts finish (speed 3, 3 replicas)
		if err := r.Step(ctx, tick); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := r.Step(ctx, tick); err != nil {
			b.Fatal(err)
		}
		tick++
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-tick-ms")
}

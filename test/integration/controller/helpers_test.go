package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

const wdsName = "wds1"

// waitTimeout bounds every wait for the controller to converge.
const waitTimeout = 30 * time.Second

// startManager runs statusfold's reconciler in-process against cp until the returned stop
// function is called (or the test ends), and returns it.
func startManager(t *testing.T, cp *framework.ControlPlane, opts aggregator.Options) (agg *aggregator.Aggregator, stop func()) {
	t.Helper()
	useTestLogger(t)
	return startManagerWith(t, cp, cp.Config, opts, logr.Logger{})
}

// useTestLogger makes controller-runtime's global logger the test's log when STATUSFOLD_TEST_LOG
// is set, else a logger that discards.
func useTestLogger(t *testing.T) {
	if os.Getenv("STATUSFOLD_TEST_LOG") != "" {
		log.SetLogger(testr.New(t))
	} else {
		log.SetLogger(logr.Discard())
	}
}

// startManagerWith runs the reconciler in-process with cfg (cp's, or an impersonating one) until the
// returned stop function is called (or the test ends); logger, unless zero, is the manager's
// logger (else controller-runtime's global one).
func startManagerWith(t *testing.T, cp *framework.ControlPlane, cfg *rest.Config, opts aggregator.Options, logger logr.Logger) (agg *aggregator.Aggregator, stop func()) {
	t.Helper()
	if opts.WDSName == "" {
		opts.WDSName = wdsName
	}
	if opts.CoalesceDelay == 0 {
		opts.CoalesceDelay = 20 * time.Millisecond
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	agg, err = aggregator.Setup(mgr, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return agg, stop
}

// eventually retries check until it returns nil, failing the test with its last error after
// waitTimeout.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		err = check()
		return err == nil, nil
	}) != nil {
		t.Fatalf("%s: not reached within %s: %v", what, waitTimeout, err)
	}
}

// --- inventory and WECs ---

// addCluster creates a WEC's inventory object (ManagedCluster) and mailbox namespace.
func addCluster(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ensureNamespace(t, c, name)
}

func setClusterLabels(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	var mc clusterv1.ManagedCluster
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Labels = labels
	if err := c.Update(context.Background(), &mc); err != nil {
		t.Fatal(err)
	}
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// report simulates a WEC reporting the state of obj: it creates or updates the WorkStatus in the
// WEC's mailbox namespace (status through the status subresource, as the agent does). A nil
// status means the WEC has reported nothing.
func report(t *testing.T, c client.Client, wec string, ref controlv1alpha1.SourceRef, status map[string]any, details controlv1alpha1.StatusDetails) {
	t.Helper()
	reportNamed(t, c, wdsName, wec, fmt.Sprintf("%s-%s-%s", ref.Resource, ref.Namespace, ref.Name), ref, status, details)
}

// reportNamed is report for the WDS named wds (the WorkStatus's originWdsName label), in a
// WorkStatus of the given name.
func reportNamed(t *testing.T, c client.Client, wds, wec, name string, ref controlv1alpha1.SourceRef, status map[string]any, details controlv1alpha1.StatusDetails) {
	t.Helper()
	ctx := context.Background()
	var ws controlv1alpha1.WorkStatus
	err := c.Get(ctx, client.ObjectKey{Namespace: wec, Name: name}, &ws)
	switch {
	case apierrors.IsNotFound(err):
		ws = controlv1alpha1.WorkStatus{
			ObjectMeta:    metav1.ObjectMeta{Namespace: wec, Name: name, Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: wds}},
			Spec:          controlv1alpha1.WorkStatusSpec{SourceRef: ref},
			StatusDetails: details,
		}
		if err := c.Create(ctx, &ws); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		ws.StatusDetails = details
		if err := c.Update(ctx, &ws); err != nil {
			t.Fatal(err)
		}
	}
	raw := []byte("null")
	if status != nil {
		if raw, err = json.Marshal(status); err != nil {
			t.Fatal(err)
		}
	}
	ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
	if err := c.Status().Update(ctx, &ws); err != nil {
		t.Fatal(err)
	}
}

// reportStatus changes only the status that wec reports for the object (its WorkStatus's
// statusDetails stay as they are): one WorkStatus update, so one watch event and one evaluation of
// the object. report writes the details too, a second event whenever they differ (applied's
// lastCurrencyUpdateTime has whole seconds).
func reportStatus(t *testing.T, c client.Client, wec string, ref controlv1alpha1.SourceRef, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	var ws controlv1alpha1.WorkStatus
	if err := c.Get(ctx, client.ObjectKey{Namespace: wec, Name: fmt.Sprintf("%s-%s-%s", ref.Resource, ref.Namespace, ref.Name)}, &ws); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
	if err := c.Status().Update(ctx, &ws); err != nil {
		t.Fatal(err)
	}
}

func deleteReport(t *testing.T, c client.Client, wec string, ref controlv1alpha1.SourceRef) {
	t.Helper()
	ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: fmt.Sprintf("%s-%s-%s", ref.Resource, ref.Namespace, ref.Name)}}
	if err := c.Delete(context.Background(), ws); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// applied is the StatusDetails of a WEC that applied generation gen.
func applied(gen int64) controlv1alpha1.StatusDetails {
	return controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true, LastCurrencyUpdateTime: metav1.Now()}
}

// appliedAt is applied with the given lastCurrencyUpdateTime: a report of the same status whose
// details differ from the stored ones at once, without waiting for the next whole second.
func appliedAt(gen int64, at time.Time) controlv1alpha1.StatusDetails {
	return controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true, LastCurrencyUpdateTime: metav1.NewTime(at)}
}

// --- workload objects ---

func deployment(t *testing.T, c client.Client, ns, name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	t.Helper()
	ensureNamespace(t, c, ns)
	sel := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: podTemplate(sel)},
	}
	if err := c.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func replicaSet(t *testing.T, c client.Client, ns, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	ensureNamespace(t, c, ns)
	sel := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: podTemplate(sel)},
	}
	if err := c.Create(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func deploymentRef(d *appsv1.Deployment) controlv1alpha1.SourceRef {
	return controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}
}

// deploymentStatus is a WEC's reported Deployment status.
func deploymentStatus(replicas, ready int64, gen int64) map[string]any {
	return map[string]any{
		"observedGeneration": gen, "replicas": replicas, "readyReplicas": ready, "availableReplicas": ready,
		"updatedReplicas": replicas,
	}
}

// takeStatusField has another field manager ("other-controller") take a status field of the
// Deployment with the given value, by a forced server-side apply.
func takeStatusField(t *testing.T, c client.Client, d *appsv1.Deployment, field string, value int64) {
	t.Helper()
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": d.Name, "namespace": d.Namespace},
		"status":   map[string]any{field: value},
	}}
	if err := c.SubResource("status").Apply(context.Background(), client.ApplyConfigurationFromUnstructured(other),
		client.FieldOwner("other-controller"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// getObject reads an object as unstructured, straight from the apiserver.
func getObject(c client.Client, gvkObj client.Object, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	gvk, err := c.GroupVersionKindFor(gvkObj)
	if err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

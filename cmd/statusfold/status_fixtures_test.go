package main

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The objects that the `statusfold status` tests against a real apiserver create: the Deployment
// demo/web, a Binding that sends it to WECs, and the WECs' WorkStatuses about it.

// mustCreate creates o through c, and fails the test when that fails.
func mustCreate(t *testing.T, ctx context.Context, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
}

// webDeployment is the Deployment demo/web (two nginx replicas) with labels.
func webDeployment(labels map[string]string) *appsv1.Deployment {
	sel := map[string]string{"app": "web"}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
}

// webBinding is the Binding named name that sends the Deployment demo/web to wecs.
func webBinding(name string, wecs ...string) *controlv1alpha1.Binding {
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
		GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "demo", Name: "web"}}}
	for _, wec := range wecs {
		b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterId: wec})
	}
	return b
}

// createWorkStatus creates, in the mailbox namespace wec, the WorkStatus of the WDS named origin
// about the Deployment demo/<name>, with details, and then writes status (JSON) as its status.
func createWorkStatus(t *testing.T, ctx context.Context, c client.Client, wec, origin, name string, details controlv1alpha1.StatusDetails, status string) {
	t.Helper()
	ws := &controlv1alpha1.WorkStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: "deployments-demo-" + name, Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: origin}},
		Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "deployments",
			Kind: "Deployment", Namespace: "demo", Name: name}},
		StatusDetails: details,
	}
	mustCreate(t, ctx, c, ws)
	ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: []byte(status)}}
	if err := c.Status().Update(ctx, ws); err != nil {
		t.Fatal(err)
	}
}

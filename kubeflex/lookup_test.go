package kubeflex

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// cpOption changes a ControlPlane built by controlPlane.
type cpOption func(*unstructured.Unstructured)

func withRole(role string) cpOption {
	return func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{TypeLabel: role}) }
}

func withType(t string) cpOption {
	return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, t, "spec", "type") }
}

// withSecretRef sets status.secretRef as KubeFlex writes it for a control plane of type k8s.
func withSecretRef(ns, name string) cpOption {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"namespace": ns, "name": name,
			"key": "kubeconfig", "inClusterKey": "kubeconfig-incluster"}, "status", "secretRef")
	}
}

func controlPlane(name string, opts ...cpOption) *unstructured.Unstructured {
	u := newControlPlaneObject()
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "k8s", "spec", "type")
	for _, o := range opts {
		o(u)
	}
	return u
}

// kubeconfig is a kubeconfig whose server is host.
func kubeconfig(host string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + host + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
}

// kubeconfigSecret holds, like KubeFlex's, one kubeconfig for outside the hosting cluster and one
// for pods inside it.
func kubeconfigSecret(ns, name, outside, inside string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"kubeconfig": kubeconfig(outside), "kubeconfig-incluster": kubeconfig(inside)}}
}

func newFinder(inCluster bool, objs ...client.Object) Finder {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	return Finder{Client: c, Hosting: &rest.Config{Host: "https://hosting"}, InCluster: inCluster}
}

func TestSpace(t *testing.T) {
	wds1 := controlPlane("wds1", withRole(TypeWDS), withSecretRef("wds1-system", "admin-kubeconfig"))
	wds1Secret := kubeconfigSecret("wds1-system", "admin-kubeconfig", "https://wds1.outside", "https://wds1.inside")
	its1 := controlPlane("its1", withRole(TypeITS), withType("vcluster"), withSecretRef("its1-system", "vc-vcluster"))
	its1Secret := kubeconfigSecret("its1-system", "vc-vcluster", "https://its1.outside", "https://its1.inside")
	its2 := controlPlane("its2", withRole(TypeITS), withSecretRef("its2-system", "admin-kubeconfig"))
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		inCluster bool
		role, cp  string
		wantHost  string
		wantErr   string
		notReady  bool
	}{
		{name: "wds by name, outside: key", objs: []client.Object{wds1, wds1Secret}, role: TypeWDS, cp: "wds1", wantHost: "https://wds1.outside"},
		{name: "wds by name, in a pod: inClusterKey", objs: []client.Object{wds1, wds1Secret}, inCluster: true, role: TypeWDS, cp: "wds1", wantHost: "https://wds1.inside"},
		{name: "its by name", objs: []client.Object{its1, its1Secret, its2}, role: TypeITS, cp: "its1", wantHost: "https://its1.outside"},
		{name: "its omitted, one ITS", objs: []client.Object{wds1, its1, its1Secret}, role: TypeITS, wantHost: "https://its1.outside"},
		{name: "its omitted, two ITSes", objs: []client.Object{its1, its1Secret, its2}, role: TypeITS,
			wantErr: `2 ControlPlanes are labelled kflex.kubestellar.io/cptype=its ([its1 its2]): name one (--its-name)`},
		{name: "its omitted, none", objs: []client.Object{wds1}, role: TypeITS, notReady: true,
			wantErr: "no ControlPlane labelled kflex.kubestellar.io/cptype=its"},
		{name: "type host: the hosting cluster, no Secret read", objs: []client.Object{controlPlane("wds1", withRole(TypeWDS), withType("host"))},
			role: TypeWDS, cp: "wds1", wantHost: "https://hosting"},
		{name: "named, without the role label", objs: []client.Object{controlPlane("wds1", withSecretRef("wds1-system", "admin-kubeconfig")), wds1Secret},
			role: TypeWDS, cp: "wds1", wantHost: "https://wds1.outside"},
		{name: "named, labelled as the other role", objs: []client.Object{its1}, role: TypeWDS, cp: "its1",
			wantErr: `ControlPlane "its1" is labelled kflex.kubestellar.io/cptype=its, not wds`},
		{name: "not created", role: TypeWDS, cp: "wds1", notReady: true, wantErr: `ControlPlane "wds1" not found`},
		{name: "no secretRef yet", objs: []client.Object{controlPlane("wds1", withRole(TypeWDS))}, role: TypeWDS, cp: "wds1",
			notReady: true, wantErr: `ControlPlane "wds1" (wds) has no status.secretRef yet`},
		{name: "Secret missing", objs: []client.Object{wds1}, role: TypeWDS, cp: "wds1", notReady: true,
			wantErr: `Secret wds1-system/admin-kubeconfig of ControlPlane "wds1" (wds) not found`},
		{name: "Secret without the key", inCluster: true, role: TypeWDS, cp: "wds1", notReady: true,
			objs: []client.Object{wds1, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "wds1-system", Name: "admin-kubeconfig"},
				Data: map[string][]byte{"kubeconfig": kubeconfig("https://x")}}},
			wantErr: `Secret wds1-system/admin-kubeconfig of ControlPlane "wds1" (wds) has no key "kubeconfig-incluster" yet`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newFinder(tc.inCluster, tc.objs...).Space(context.Background(), tc.role, tc.cp)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if IsNotReady(err) != tc.notReady {
					t.Errorf("IsNotReady(%v) = %v, want %v", err, !tc.notReady, tc.notReady)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Config.Host != tc.wantHost {
				t.Errorf("host %q, want %q", s.Config.Host, tc.wantHost)
			}
			if s.Role != tc.role {
				t.Errorf("role %q, want %q", s.Role, tc.role)
			}
		})
	}
}

// TestWaitThenChanged: Wait reports what is missing until the ControlPlane and its Secret exist;
// Changed notices a rotated Secret.
func TestWaitThenChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newFinder(false)
	var reports []string
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = f.Client.(client.Client).Create(ctx, controlPlane("wds1", withRole(TypeWDS), withSecretRef("wds1-system", "admin-kubeconfig")))
		time.Sleep(30 * time.Millisecond)
		_ = f.Client.(client.Client).Create(ctx, kubeconfigSecret("wds1-system", "admin-kubeconfig", "https://a", "https://a"))
	}()
	s, err := f.Wait(ctx, logr.Discard(), TypeWDS, "wds1", WaitOptions{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond,
		Report: func(m string) { reports = append(reports, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Config.Host != "https://a" || reports[len(reports)-1] != "" || !strings.Contains(reports[0], `ControlPlane "wds1" not found`) {
		t.Errorf("host %q, reports %q", s.Config.Host, reports)
	}
	quiet, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if got := f.Changed(quiet, logr.Discard(), 5*time.Millisecond, s); got != "" {
		t.Fatalf("nothing changed, Changed says %q", got)
	}
	rotated := kubeconfigSecret("wds1-system", "admin-kubeconfig", "https://b", "https://b")
	if err := f.Client.(client.Client).Update(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	want := `ControlPlane "wds1" (wds): the kubeconfig changed (Secret wds1-system/admin-kubeconfig, key kubeconfig)`
	if got := f.Changed(ctx, logr.Discard(), 5*time.Millisecond, s); got != want {
		t.Errorf("Changed = %q, want %q", got, want)
	}
}

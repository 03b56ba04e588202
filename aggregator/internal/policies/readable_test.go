package policies

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// discoveryWithSecrets serves Deployments and Secrets.
func discoveryWithSecrets() *fakediscovery.FakeDiscovery {
	d := discoveryOf()
	verbs := metav1.Verbs{"get", "list", "watch"}
	d.Fake = &clienttesting.Fake{Resources: append(d.Resources, &metav1.APIResourceList{GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: verbs}}})}
	return d
}

// secretEntry is a Binding's entry for the Secret ns/s.
var secretEntry = controlv1alpha1.NamespaceScopeDownsyncClause{NamespaceScopeDownsyncObject: controlv1alpha1.NamespaceScopeDownsyncObject{
	GroupVersionResource: metav1.GroupVersionResource{Version: "v1", Resource: "secrets"}, Namespace: "ns", Name: "s", ResourceVersion: "7"},
	DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true}}

// secretsPolicy is policy() with a second clause selecting the Secrets of namespace ns.
func secretsPolicy() *controlv1alpha1.BindingPolicy {
	bp := policy()
	core := ""
	bp.Spec.Downsync = append(bp.Spec.Downsync, controlv1alpha1.DownsyncPolicyClause{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: &core, Resources: []string{"secrets"}, Namespaces: []string{"ns"}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true}})
	return bp
}

// TestResourcesReadable: a policy that selects Secrets while they are not opted in, or a
// resource whose list is Forbidden, gets ResourcesReadable=False naming it, and its Binding keeps
// the entry it had for it; once the resource is read, the condition goes.
func TestResourcesReadable(t *testing.T) {
	forbidden := func(context.Context, resources.ResourceInfo, string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: not allowed"))
	}
	readable := &controlv1alpha1.BindingPolicyCondition{Type: controlv1alpha1.ConditionResourcesReadable, Status: corev1.ConditionFalse}
	cases := []struct {
		name     string
		access   resources.Access
		external bool
		had      []controlv1alpha1.BindingPolicyCondition // the policy's conditions before
		reason   string                                   // "": no ResourcesReadable condition written
		message  string
	}{
		{name: "Secrets not opted in", reason: resources.ReasonNotOptedIn, message: "--watch-secrets"},
		{name: "Secrets not opted in, external resolution", external: true, reason: resources.ReasonNotOptedIn, message: "--watch-secrets"},
		{name: "Secrets opted in, list forbidden", access: resources.Access{WatchSecrets: true, Probe: forbidden},
			reason: resources.ReasonForbidden, message: "RBAC: not allowed"},
		{name: "Secrets opted in and listed: the condition goes", access: resources.Access{WatchSecrets: true},
			had: append(available(), *readable)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := resolved()
			cur.Workload.NamespaceScope = append(cur.Workload.NamespaceScope, secretEntry)
			bp := withStatus(secretsPolicy(), tc.had)
			requeued := 0
			h := newHarnessWith(!tc.external, nil, discoveryWithSecrets(), tc.access, world(bp, bindingOf(cur, nil))...)
			h.r.requeue = func(string, time.Duration) { requeued++ }
			if err := h.r.Reconcile(context.Background(), "bp"); err != nil {
				t.Fatal(err)
			}
			var status *controlv1alpha1.BindingPolicy
			for _, w := range h.api.Writes {
				if w.Obj.GetKind() == "BindingPolicy" {
					status = &controlv1alpha1.BindingPolicy{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(w.Obj.Object, status); err != nil {
						t.Fatal(err)
					}
				}
				if tc.reason != "" && w.Obj.GetKind() == "Binding" && w.Sub == "" && !strings.Contains(fmt.Sprint(w.Obj.Object), "secrets") {
					t.Errorf("the Binding lost its Secret entry: %v", w.Obj.Object)
				}
			}
			if status == nil {
				t.Fatal("no BindingPolicy status written")
			}
			var got *controlv1alpha1.BindingPolicyCondition
			for i, c := range status.Status.Conditions {
				if c.Type == controlv1alpha1.ConditionResourcesReadable {
					got = &status.Status.Conditions[i]
				}
			}
			switch {
			case tc.reason == "" && got != nil:
				t.Errorf("condition %+v, want none", *got)
			case tc.reason != "" && (got == nil || got.Reason != tc.reason || got.Status != corev1.ConditionFalse ||
				!strings.Contains(got.Message, "secrets") || !strings.Contains(got.Message, tc.message)):
				t.Errorf("condition %+v, want False %s naming secrets and %q", got, tc.reason, tc.message)
			}
			if (tc.reason != "") != (requeued == 1) {
				t.Errorf("requeued %d times", requeued)
			}
		})
	}
}

// New keeps the requeue and its delay: without them a policy with ResourcesReadable=False would
// not be looked at again, and the condition would stay after access came back.
func TestNewKeepsRecheck(t *testing.T) {
	var got time.Duration
	r := New(Config{Requeue: func(_ string, after time.Duration) { got = after }, Recheck: 30 * time.Second})
	if r.requeue == nil {
		t.Fatal("New dropped Config.Requeue")
	}
	r.requeue("bp", r.recheck)
	if got != 30*time.Second {
		t.Errorf("requeued after %s, want 30s (Config.Recheck)", got)
	}
}

package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	apischeme "github.com/statusfold/statusfold/api/scheme"
)

// fakeAuthorizer allows what allow says and records every question.
type fakeAuthorizer struct {
	allow func(authorizationv1.ResourceAttributes) bool
	err   error
	asked []authorizationv1.ResourceAttributes
	users []authenticationv1.UserInfo
}

func (f *fakeAuthorizer) Allowed(_ context.Context, u authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	f.asked, f.users = append(f.asked, a), append(f.users, u)
	if f.err != nil {
		return false, f.err
	}
	return f.allow != nil && f.allow(a), nil
}

var alice = authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"devs"},
	Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}}

func accessFor(f *fakeAuthorizer) Access {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return Access{Authorizer: f, Mapper: m}
}

// admit sends obj (and old, for an update) to the access-checked validator of its kind as
// alice, and returns the response.
func admit(t *testing.T, f *fakeAuthorizer, obj, old client.Object) admission.Response {
	t.Helper()
	c, a := newChecker(t), accessFor(f)
	var wh *admission.Webhook
	switch obj.(type) {
	case *policyv1alpha1.AggregationPolicy:
		wh = admission.WithValidator[*policyv1alpha1.AggregationPolicy](apischeme.New(),
			NewAggregationPolicyValidator(c).WithAccess(a.AggregationPolicy))
	default:
		wh = admission.WithValidator[*controlv1alpha1.BindingPolicy](apischeme.New(),
			NewBindingPolicyValidator(c).WithAccess(a.BindingPolicy))
	}
	raw := func(o client.Object) runtime.RawExtension {
		gvk, _, err := apischeme.New().ObjectKinds(o)
		if err != nil {
			t.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvk[0])
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	req := admissionv1.AdmissionRequest{UID: "r", Operation: admissionv1.Create, Object: raw(obj), UserInfo: alice}
	if old != nil {
		req.Operation, req.OldObject = admissionv1.Update, raw(old)
	}
	return wh.Handle(context.Background(), admission.Request{AdmissionRequest: req})
}

func deploymentPolicy() *policyv1alpha1.AggregationPolicy {
	return &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "Deployment"},
			Rego: "package p\nstatus := {\"n\": 1}\n"}}
}

func denial(r admission.Response) string {
	if r.Allowed || r.Result == nil {
		return ""
	}
	return r.Result.Message
}

// TestAggregationPolicyNeedsStatusPatch: an AggregationPolicy is admitted only when its requester
// (the request's UserInfo, all of it) may patch the target kind's status cluster-wide; a spec
// update is checked again, a metadata-only update is not refused; an unknown kind is checked on
// its guessed plural, with a warning; a failing review refuses.
func TestAggregationPolicyNeedsStatusPatch(t *testing.T) {
	deny := &fakeAuthorizer{}
	r := admit(t, deny, deploymentPolicy(), nil)
	want := "spec.target: Forbidden: statusfold writes this policy's result into the .status of every Deployment that a BindingPolicy returns status for, in every namespace, so creating or changing it needs patch on deployments/status in apps cluster-wide: alice may not"
	if !strings.Contains(denial(r), want) {
		t.Errorf("denial %q, want it to contain %q", denial(r), want)
	}
	wantAttrs := authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Subresource: "status", Verb: "patch"}
	if len(deny.asked) != 1 || deny.asked[0] != wantAttrs || fmt.Sprint(deny.users[0]) != fmt.Sprint(alice) {
		t.Errorf("asked %+v as %+v, want %+v as %+v", deny.asked, deny.users, wantAttrs, alice)
	}

	allow := &fakeAuthorizer{allow: func(a authorizationv1.ResourceAttributes) bool { return a == wantAttrs }}
	if r := admit(t, allow, deploymentPolicy(), nil); !r.Allowed {
		t.Errorf("allowed requester refused: %s", denial(r))
	}
	changed := deploymentPolicy()
	changed.Spec.Rego = "package p\nstatus := {\"n\": 2}\n"
	if r := admit(t, &fakeAuthorizer{}, changed, deploymentPolicy()); !strings.Contains(denial(r), "may not") {
		t.Errorf("spec update: %q, want a refusal", denial(r))
	}
	relabelled := deploymentPolicy()
	relabelled.Labels = map[string]string{"a": "b"}
	if r := admit(t, &fakeAuthorizer{}, relabelled, deploymentPolicy()); !r.Allowed {
		t.Errorf("metadata-only update refused: %s", denial(r))
	}

	widget := deploymentPolicy()
	widget.Spec.Target = policyv1alpha1.TargetKind{Group: "example.io", Kind: "Widget"}
	r = admit(t, deny, widget, nil)
	if !strings.Contains(denial(r), "needs patch on widgets/status in example.io cluster-wide: alice may not") ||
		len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `guessed resource "widgets"`) {
		t.Errorf("unknown kind: %q, warnings %q", denial(r), r.Warnings)
	}
	core := deploymentPolicy()
	core.Spec.Target = policyv1alpha1.TargetKind{Kind: "Pod"}
	if r := admit(t, deny, core, nil); !strings.Contains(denial(r), "needs patch on pods/status in the core group cluster-wide") {
		t.Errorf("core kind: %q", denial(r))
	}
	broken := &fakeAuthorizer{err: errors.New("apiserver unreachable")}
	if r := admit(t, broken, deploymentPolicy(), nil); !strings.Contains(denial(r), "apiserver unreachable") {
		t.Errorf("failing review: %q, want a refusal naming the error", denial(r))
	}
}

func secretsPolicy(clauses ...controlv1alpha1.DownsyncPolicyClause) *controlv1alpha1.BindingPolicy {
	return &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bp"},
		Spec: controlv1alpha1.BindingPolicySpec{Downsync: clauses}}
}

func clause(group *string, resources, namespaces, collectors []string) controlv1alpha1.DownsyncPolicyClause {
	return controlv1alpha1.DownsyncPolicyClause{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: group, Resources: resources, Namespaces: namespaces},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: collectors}}
}

// TestBindingPolicyNeedsSecretReads: a clause that can select Secrets and names collectors needs
// get and list on Secrets where it can match; other clauses ask nothing.
func TestBindingPolicyNeedsSecretReads(t *testing.T) {
	sc := []string{"c"}
	many := make([]string, MaxNamespaceReviews+1)
	for i := range many {
		many[i] = fmt.Sprintf("ns%d", i)
	}
	tests := []struct {
		name   string
		clause controlv1alpha1.DownsyncPolicyClause
		want   string   // in the denial; "" when admitted without questions
		asked  []string // namespaces asked about ("" cluster-wide)
	}{
		{"explicit secrets, two namespaces", clause(ptr.To(""), []string{"secrets"}, []string{"b", "a", "b"}, sc),
			`spec.downsync[0]: Forbidden: selects Secrets (resources: ["secrets"]) and names statusCollectors, so statusfold would put what the collectors read from Secrets into CombinedStatus objects; that needs get and list on secrets in namespaces a, b: alice may not`,
			[]string{"a", "b"}},
		{"wildcard in any group, every namespace", clause(nil, []string{"*"}, nil, sc),
			`that needs get and list on secrets cluster-wide: alice may not`, []string{""}},
		{"no resources, namespace *", clause(ptr.To(""), nil, []string{"x", "*"}, sc),
			`selects Secrets (no resources, which matches every resource)`, []string{""}},
		{"many namespaces reviewed cluster-wide", clause(ptr.To(""), []string{"secrets"}, many, sc),
			`secrets cluster-wide`, []string{""}},
		{"no collectors", clause(nil, []string{"*"}, nil, nil), "", nil},
		{"another group", clause(ptr.To("apps"), []string{"*"}, nil, sc), "", nil},
		{"other resources", clause(ptr.To(""), []string{"services"}, nil, sc), "", nil},
		{"explicit configmaps", clause(ptr.To(""), []string{"configmaps"}, []string{"a"}, sc),
			`selects ConfigMaps (resources: ["configmaps"]) and names statusCollectors, so statusfold would put what the collectors read from ConfigMaps into CombinedStatus objects; that needs get and list on configmaps in namespace a: alice may not`,
			[]string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAuthorizer{}
			r := admit(t, f, secretsPolicy(tc.clause), nil)
			if tc.want == "" && !r.Allowed || !strings.Contains(denial(r), tc.want) {
				t.Errorf("denial %q, want %q", denial(r), tc.want)
			}
			var asked []string
			for _, a := range f.asked {
				if (a.Resource != "secrets" && a.Resource != "configmaps") || a.Group != "" || a.Verb != "get" {
					t.Errorf("asked %+v", a)
				}
				asked = append(asked, a.Namespace)
			}
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked about namespaces %q, want %q", asked, tc.asked)
			}
		})
	}
	// Both get and list are needed; a list denied in one of two namespaces names that one.
	f := &fakeAuthorizer{allow: func(a authorizationv1.ResourceAttributes) bool { return a.Namespace == "a" || a.Verb == "get" }}
	r := admit(t, f, secretsPolicy(clause(ptr.To(""), []string{"secrets"}, []string{"a", "b"}, sc)), nil)
	if !strings.Contains(denial(r), "secrets in namespace b: alice may not") {
		t.Errorf("denial %q, want namespace b named", denial(r))
	}
	all := &fakeAuthorizer{allow: func(authorizationv1.ResourceAttributes) bool { return true }}
	if r := admit(t, all, secretsPolicy(clause(nil, []string{"*"}, nil, sc), clause(nil, nil, []string{"*"}, sc)), nil); !r.Allowed || len(all.asked) != 4 {
		t.Errorf("reader of every Secret and ConfigMap: %q after %d questions, want admitted after 4 (get, list of each; asked once)", denial(r), len(all.asked))
	}
}

// TestAccessWithoutRequest: without an admission request in the context (no requester), a
// policy whose check needs one is refused.
func TestAccessWithoutRequest(t *testing.T) {
	a := accessFor(&fakeAuthorizer{allow: func(authorizationv1.ResourceAttributes) bool { return true }})
	if errs, _ := a.AggregationPolicy(context.Background(), deploymentPolicy()); len(errs) != 1 || !strings.Contains(errs[0].Error(), "requester is unknown") {
		t.Errorf("errors %v", errs)
	}
}

// TestSARAuthorizer: the review carries all of the user's identity and the attributes, and its
// answer is returned.
func TestSARAuthorizer(t *testing.T) {
	cs := fake.NewClientset()
	var got *authorizationv1.SubjectAccessReview
	cs.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		got = action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		got.Status.Allowed = got.Spec.User == "alice"
		return true, got, nil
	})
	attrs := authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Subresource: "status", Verb: "patch"}
	ok, err := SARAuthorizer(cs.AuthorizationV1().SubjectAccessReviews()).Allowed(context.Background(), alice, attrs)
	if err != nil || !ok {
		t.Fatalf("Allowed: %v, %v", ok, err)
	}
	s := got.Spec
	if s.User != "alice" || s.UID != "u-1" || !slices.Equal(s.Groups, alice.Groups) ||
		!slices.Equal(s.Extra["scopes"], authorizationv1.ExtraValue{"a"}) || *s.ResourceAttributes != attrs {
		t.Errorf("review spec %+v", s)
	}
}

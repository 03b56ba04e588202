package webhooks

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	apischeme "github.com/statusfold/statusfold/api/scheme"
)

// TestStatusCollectorNeedsReadsOfItsPolicies: a StatusCollector that a BindingPolicy names in a
// clause selecting Secrets (or ConfigMaps) is admitted only when its requester may read them
// where the clause matches — whoever changes the collector changes what is copied from them; a
// collector no such clause names asks nothing.
func TestStatusCollectorNeedsReadsOfItsPolicies(t *testing.T) {
	policies := fake.NewClientBuilder().WithScheme(apischeme.New()).WithObjects(
		secretsPolicy(clause(ptr.To(""), []string{"deployments"}, nil, []string{"plain"}),
			clause(ptr.To(""), []string{"secrets"}, []string{"team-a"}, []string{"reader", "plain2"}))).Build()
	ctx := admission.NewContextWithRequest(context.Background(),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UserInfo: alice}})
	collector := func(name string) *controlv1alpha1.StatusCollector {
		return &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}

	none := &fakeAuthorizer{}
	a := Access{Authorizer: none, Policies: policies}
	errs, _ := a.StatusCollector(ctx, collector("reader"))
	want := `spec: Forbidden: BindingPolicy bp spec.downsync[1] names this collector and selects Secrets (resources: ["secrets"]) and names statusCollectors, so statusfold would put what the collectors read from Secrets into CombinedStatus objects; that needs get and list on secrets in namespace team-a: alice may not`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors %v, want %q", errs, want)
	}
	for _, name := range []string{"plain", "unnamed"} {
		none.asked = nil
		if errs, _ := a.StatusCollector(ctx, collector(name)); len(errs) != 0 || len(none.asked) != 0 {
			t.Errorf("collector %s: errors %v after %d questions, want none", name, errs, len(none.asked))
		}
	}
	secretReader := &fakeAuthorizer{allow: func(r authorizationv1.ResourceAttributes) bool {
		return r.Resource == "secrets" && r.Namespace == "team-a"
	}}
	if errs, _ := (Access{Authorizer: secretReader, Policies: policies}).StatusCollector(ctx, collector("reader")); len(errs) != 0 {
		t.Errorf("a reader of team-a's Secrets: %v, want admitted", errs)
	}
	if errs, _ := (Access{Authorizer: none}).StatusCollector(ctx, collector("reader")); len(errs) != 0 {
		t.Errorf("without Policies: %v, want nothing checked", errs)
	}
	if errs, _ := a.StatusCollector(context.Background(), collector("reader")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "requester is unknown") {
		t.Errorf("without a request: %v", errs)
	}
}

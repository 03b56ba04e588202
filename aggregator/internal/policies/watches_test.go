package policies

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The namespaces a policy's clauses can select a resource in (docs/security.md, "Reads"): the
// names when every clause that wants the resource names some, else every namespace.
func TestPolicyScope(t *testing.T) {
	deployments := resources.ResourceInfo{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	roles := resources.ResourceInfo{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole"}
	apps, core := "apps", ""
	byLabel := []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}
	clause := func(group *string, resources []string, namespaces []string, nsSel []metav1.LabelSelector) controlv1alpha1.DownsyncPolicyClause {
		return controlv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			APIGroup: group, Resources: resources, Namespaces: namespaces, NamespaceSelectors: nsSel}}
	}
	for _, tc := range []struct {
		name    string
		info    resources.ResourceInfo
		clauses []controlv1alpha1.DownsyncPolicyClause
		want    string // "-": not wanted
	}{
		{"one namespace", deployments, []controlv1alpha1.DownsyncPolicyClause{clause(&apps, []string{"deployments"}, []string{"a"}, nil)}, "a"},
		{"two clauses, their namespaces", deployments, []controlv1alpha1.DownsyncPolicyClause{
			clause(&apps, []string{"deployments"}, []string{"b"}, nil), clause(nil, nil, []string{"a"}, nil)}, "a,b"},
		{"one clause without namespaces widens", deployments, []controlv1alpha1.DownsyncPolicyClause{
			clause(&apps, []string{"deployments"}, []string{"a"}, nil), clause(&apps, nil, nil, nil)}, "*"},
		{"\"*\"", deployments, []controlv1alpha1.DownsyncPolicyClause{clause(&apps, nil, []string{"a", "*"}, nil)}, "*"},
		{"namespaceSelectors alone: every namespace", deployments, []controlv1alpha1.DownsyncPolicyClause{clause(&apps, nil, nil, byLabel)}, "*"},
		{"namespaceSelectors and names: the names", deployments, []controlv1alpha1.DownsyncPolicyClause{clause(&apps, nil, []string{"a"}, byLabel)}, "a"},
		{"a clause of another group does not widen", deployments, []controlv1alpha1.DownsyncPolicyClause{
			clause(&apps, nil, []string{"a"}, nil), clause(&core, nil, nil, nil)}, "a"},
		{"not selected", deployments, []controlv1alpha1.DownsyncPolicyClause{clause(&core, nil, []string{"a"}, nil)}, "-"},
		{"cluster-scoped: every namespace", roles, []controlv1alpha1.DownsyncPolicyClause{clause(nil, []string{"clusterroles"}, []string{"a"}, nil)}, "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bp := &controlv1alpha1.BindingPolicy{Spec: controlv1alpha1.BindingPolicySpec{Downsync: tc.clauses}}
			scope, ok := policyScope(bp, tc.info)
			got := "-"
			if ok {
				got = scope.String()
			}
			if got != tc.want {
				t.Errorf("scope %q, want %q", got, tc.want)
			}
		})
	}
}

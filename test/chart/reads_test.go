package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// readRules are the rules of the manager's ClusterRole that grant get, list and watch and nothing
// else, as "groups/resources" strings.
func readRules(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	const key = "ClusterRole//statusfold-manager"
	if objs[key] == nil {
		t.Fatalf("no %s in %v", key, keys(objs))
	}
	rules, _, _ := unstructured.NestedSlice(objs[key].Object, "rules")
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		if slices.Equal(verbs, []string{"get", "list", "watch"}) {
			out = append(out, fmt.Sprintf("%s/%s", strings.Join(groups, ","), strings.Join(res, ",")))
		}
	}
	return out
}

// TestReadsValue: by default the manager reads every resource (RBAC cannot leave Secrets out);
// the value `reads` replaces that rule by the groups and resources it lists (none: the empty
// list), and nothing else changes. watchSecrets adds --watch-secrets; managerGuard.enabled=false leaves the guard out.
func TestReadsValue(t *testing.T) {
	requireTools(t)
	def := readRules(t, render(t))
	if !slices.Contains(def, "*/*") {
		t.Errorf("default reads %v: no */*", def)
	}
	narrow := readRules(t, render(t, "--set-json",
		`reads=[{"apiGroups":["apps"],"resources":["deployments","statefulsets"]},{"apiGroups":[""],"resources":["configmaps"]}]`))
	if slices.Contains(narrow, "*/*") || !slices.Contains(narrow, "apps/deployments,statefulsets") || !slices.Contains(narrow, "/configmaps") {
		t.Errorf("narrowed reads %v", narrow)
	}
	others := func(rules []string) []string {
		return slices.DeleteFunc(slices.Clone(rules), func(r string) bool {
			return r == "*/*" || r == "apps/deployments,statefulsets" || r == "/configmaps"
		})
	}
	if d, n := others(def), others(narrow); !slices.Equal(d, n) {
		t.Errorf("the other read rules changed:\ndefault  %v\nnarrowed %v", d, n)
	}
	// None: reads by namespaced Roles only (docs/security.md, "Reads by namespaced Roles only").
	if none := readRules(t, render(t, "--set-json", "reads=[]")); !slices.Equal(none, others(def)) {
		t.Errorf("reads=[]: read rules %v, want only the others %v", none, others(def))
	}

	args := func(objs map[string]*unstructured.Unstructured) string {
		cs, _, _ := unstructured.NestedSlice(objs["Deployment/"+namespace+"/statusfold-manager"].Object, "spec", "template", "spec", "containers")
		a, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		return strings.Join(a, " ")
	}
	if a := args(render(t)); strings.Contains(a, "--watch-secrets") {
		t.Errorf("--watch-secrets by default: %s", a)
	}
	if a := args(render(t, "--set", "watchSecrets=true")); !strings.Contains(a, "--watch-secrets") {
		t.Errorf("watchSecrets=true without --watch-secrets: %s", a)
	}
	const guard = "ValidatingAdmissionPolicyBinding//statusfold-manager-guard"
	if objs := render(t); objs[guard] == nil || objs["ValidatingAdmissionPolicy//statusfold-manager-guard"] == nil {
		t.Errorf("the guard is not rendered by default")
	}
	if objs := render(t, "--set", "managerGuard.enabled=false"); objs[guard] != nil {
		t.Errorf("the guard rendered although disabled")
	}
}

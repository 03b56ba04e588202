package chart

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartLuaHealth: luaHealth.configMap reaches the manager's flag, and the manager may read
// ConfigMaps in that namespace only; without it, neither.
func TestChartLuaHealth(t *testing.T) {
	requireTools(t)
	objs := render(t, "--set", "luaHealth.configMap=argocd/argocd-cm")
	d := objs["Deployment/"+namespace+"/statusfold-manager"]
	if d == nil {
		t.Fatalf("no Deployment: %v", keys(objs))
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if args := fmt.Sprint(containers[0].(map[string]any)["args"]); !strings.Contains(args, "--lua-health-configmap=argocd/argocd-cm") {
		t.Errorf("manager args %s lack --lua-health-configmap", args)
	}
	role, binding := objs["Role/argocd/statusfold-lua-health"], objs["RoleBinding/argocd/statusfold-lua-health"]
	if role == nil || binding == nil {
		t.Fatalf("no Role and RoleBinding in argocd: %v", keys(objs))
	}
	if r := fmt.Sprint(role.Object["rules"]); r != "[map[apiGroups:[] resources:[configmaps] verbs:[get list watch]]]" {
		t.Errorf("rules %s", r)
	}
	if s := fmt.Sprint(binding.Object["subjects"]); !strings.Contains(s, "name:statusfold-manager namespace:"+namespace) {
		t.Errorf("subjects %s", s)
	}
	for k := range render(t) {
		if strings.Contains(k, "lua-health") {
			t.Errorf("%s rendered without luaHealth.configMap", k)
		}
	}
}

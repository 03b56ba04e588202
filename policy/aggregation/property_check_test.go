package aggregation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// TestCheckProperty: the built-in rules pass the property (a kind with a built-in module, and one
// with Argo CD's Lua check); policies that hide a WEC's trouble are caught.
func TestCheckProperty(t *testing.T) {
	checks, err := luahealth.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	rollout := schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}
	cases := []struct {
		name   string
		gk     schema.GroupKind
		rego   string // "" = built-in rules
		failed bool
	}{
		{"Deployment, built-in module", deployment, "", false},
		{"Rollout, Argo CD's Lua check", rollout, "", false},
		{"Deployment, the best WEC's readiness", deployment, `package p
import data.statusfold.builtin.deployment as builtin
combine := object.union(builtin.combine, {"updatedReplicas": "max", "availableReplicas": "max", "conditions": "drop"})
`, true},
		{"Rollout, the best WEC by its verdict", rollout, `package p
import data.statusfold.builtin.health
combine := {"*": "from_worst"}
wec_rank := 0 - health.rank[input.wec.health.status]
`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEngine(WithLuaChecks(checks))
			if err != nil {
				t.Fatal(err)
			}
			if tc.rego != "" {
				p := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: policyv1alpha1.AggregationPolicySpec{
					Target: policyv1alpha1.TargetKind{Group: tc.gk.Group, Kind: tc.gk.Kind}, Rego: tc.rego}}
				if errs := e.SetPolicy(p); errs != nil {
					t.Fatal(errs)
				}
			}
			rep, err := e.CheckProperty(tc.gk, 300, 1)
			if err != nil {
				t.Fatal(err)
			}
			if (rep.Failed > 0) != tc.failed || rep.Cases != 300 {
				t.Errorf("%d of %d cases failed (%s); want failures: %v", rep.Failed, rep.Cases, rep.Source, tc.failed)
				for _, f := range rep.Failures {
					t.Log(f)
				}
			}
		})
	}
	e, _ := NewEngine()
	if _, err := e.CheckProperty(schema.GroupKind{Group: "example.com", Kind: "Widget"}, 10, 1); err == nil {
		t.Error("a kind Argo CD does not judge must be an error")
	}
}

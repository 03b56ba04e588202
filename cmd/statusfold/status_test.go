package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/sizebudget"
)

func TestStatusWECHealthUsesTheWECGeneration(t *testing.T) {
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "nginx", "namespace": "demo", "generation": int64(7)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	done := `{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,
		"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}`
	gen := func(n int64) *int64 { return &n }
	cases := []struct {
		name   string
		status string
		wecGen *int64
		want   health.Status
	}{
		// WDS generation 7 is irrelevant: the WEC copy is at its own generation 1.
		{"done, WEC generation known", done, gen(1), health.Healthy},
		{"done, WEC generation from observedGeneration", done, nil, health.Healthy},
		{"WEC copy newer than what its status observed", done, gen(2), health.Progressing},
		{"deadline exceeded", `{"observedGeneration":1,"replicas":2,"updatedReplicas":1,
			"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}`, gen(1), health.Degraded},
	}
	sr := &statusReader{}
	var err error
	if sr.engine, err = luaEngine("", io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		ws := &controlv1alpha1.WorkStatus{
			Status:        controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: []byte(tc.status)}},
			StatusDetails: controlv1alpha1.StatusDetails{LastGeneration: 7, LastGenerationIsApplied: true, WECGeneration: tc.wecGen},
		}
		res, err := sr.wecHealth(schema.GroupKind{Group: "apps", Kind: "Deployment"}, deploy, ws)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Status != tc.want {
			t.Errorf("%s: health %s (%s), want %s", tc.name, res.Status, res.Message, tc.want)
		}
	}
	if g := deploy.GetGeneration(); g != 7 {
		t.Errorf("wecHealth changed the WDS object's generation to %d", g)
	}
}

func TestStatusTables(t *testing.T) {
	s := func(v string) *string { return &v }
	r := &statusReport{ExecutingCount: "2", Health: &healthReport{Status: health.Degraded, Message: "boom"},
		Rule: "lua/argo-cd/argoproj.io/Rollout", HealthCheck: "lua/argo-cd/argoproj.io/Rollout",
		Status: map[string]any{"replicas": 3, "conditions": []any{
			map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "not enough"},
		}}}
	r.Object.Group, r.Object.Version, r.Object.Kind, r.Object.Namespace, r.Object.Name, r.Object.Generation = "apps", "v1", "Deployment", "demo", "nginx", 1
	r.WECs = []wecReport{
		{Name: "wec1", Reported: true, Health: &healthReport{Status: health.Healthy}, LastGeneration: 1, Applied: true, Updated: "2026-01-01T00:00:00Z"},
		{Name: "wec2"},
	}
	r.Combined = []combinedReport{{Name: "u1.u2", BindingPolicy: "bp", Results: []controlv1alpha1.NamedStatusCombination{{
		Name: "count-wecs", ColumnNames: []string{"count"},
		Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeNumber, Number: s("2")}}}},
	}}}}
	var out bytes.Buffer
	if err := printStatus(&out, r, "table"); err != nil {
		t.Fatal(err)
	}
	want := `Deployment demo/nginx (apps/v1, generation 1)
Executing in 2 WECs; statusfold returns their reported state into .status
Health: Degraded — boom (check: lua/argo-cd/argoproj.io/Rollout)
Aggregation rule: lua/argo-cd/argoproj.io/Rollout

STATUS (.status in the WDS)
  replicas: 3
  CONDITION  STATUS  REASON                      MESSAGE
  Available  False   MinimumReplicasUnavailable  not enough

WECS
WEC   HEALTH   GENERATION  REPORTED              MESSAGE
wec1  Healthy  1           2026-01-01T00:00:00Z  
wec2  -        -           not yet               

COMBINEDSTATUS u1.u2 (BindingPolicy bp)
count-wecs:
count
2
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if err := printStatus(&out, r, "xml"); err == nil {
		t.Error("unknown output format accepted")
	}
}

func TestStatusExecutingLine(t *testing.T) {
	for count, want := range map[string]string{
		"1": "Executing in 1 WEC; statusfold returns",
		"3": "Executing in 3 WECs; statusfold returns",
		"0": "Executing in 0 WECs; statusfold returns",
	} {
		r := &statusReport{ExecutingCount: count}
		r.Object.Version, r.Object.Kind, r.Object.Name = "v1", "ConfigMap", "x"
		var out bytes.Buffer
		if err := printStatus(&out, r, "table"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("executing-count %s: output\n%s\nwant a line starting %q", count, out.String(), want)
		}
	}
}

// TestStatusShowsTrims: a CombinedStatus result and a returned status trimmed for the object size
// budget say so in `statusfold status`.
func TestStatusShowsTrims(t *testing.T) {
	s := func(v string) *string { return &v }
	r := &statusReport{ExecutingCount: "3", Status: map[string]any{"conditions": []any{map[string]any{
		"type": sizebudget.ConditionTrimmed, "status": "True", "reason": sizebudget.ReasonOverBudget,
		"message": "over the object size budget of 1048576 bytes: left out 7 entries of .status.items"}}}}
	r.Object.Group, r.Object.Version, r.Object.Kind, r.Object.Name = "example.com", "v1", "Widget", "w"
	r.Combined = []combinedReport{{Name: "u1.u2", BindingPolicy: "bp", Results: []controlv1alpha1.NamedStatusCombination{{
		Name: "statuses", ColumnNames: []string{"wec"},
		Rows:              []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{{Type: controlv1alpha1.TypeString, String: s("wec1")}}}},
		AggregationErrors: []controlv1alpha1.ErrorInColumn{sizebudget.Marker(1, 3, 1048576)},
	}}}}
	var out bytes.Buffer
	if err := printStatus(&out, r, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TRIMMED: StatusTrimmed=True: over the object size budget of 1048576 bytes: left out 7 entries of .status.items\n",
		"  TRIMMED: rows left out: object size budget of 1048576 bytes: the last 2 of 3 rows left out\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output\n%s\nwant the line %q", out.String(), want)
		}
	}
}

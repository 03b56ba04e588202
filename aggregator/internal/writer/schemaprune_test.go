package writer

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/statusfold/statusfold/webhooks/check"
)

// schemaOf parses a JSON schema for the test cases.
func schemaOf(t *testing.T, js string) *spec.Schema {
	t.Helper()
	s := &spec.Schema{}
	if err := json.Unmarshal([]byte(js), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// oneSchema resolves every kind to one root schema.
type oneSchema struct{ s *spec.Schema }

func (o oneSchema) ResolveSchema(schema.GroupVersionKind) (*spec.Schema, error) { return o.s, nil }

// treeOf compiles the status tree of a kind whose root schema has the given status schema
// ("": the kind declares no status); preserveAll: the root preserves unknown fields.
func treeOf(t *testing.T, status string, preserveAll bool) *FieldTree {
	t.Helper()
	root := `{"type":"object","properties":{"spec":{"type":"object"}`
	if status != "" {
		root += `,"status":` + status
	}
	root += `}`
	if preserveAll {
		root += `,"x-kubernetes-preserve-unknown-fields":true`
	}
	root += `}`
	tree, err := newFieldTrees().statusTree(oneSchema{schemaOf(t, root)}, schema.GroupVersionKind{Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func jsonMap(t *testing.T, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPruneStatus(t *testing.T) {
	const deploymentLike = `{"type":"object","properties":{
		"replicas":{"type":"integer"},
		"conditions":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"}}}},
		"labels":{"type":"object","additionalProperties":{"type":"string"}},
		"raw":{"type":"object"},
		"sized":{"type":"object","additionalProperties":{"type":"object","properties":{"n":{"type":"integer"}}}},
		"open":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"object","properties":{"a":{"type":"integer"}}}}},
		"port":{"x-kubernetes-int-or-string":true}
	}}`
	cases := []struct {
		name        string
		schema      string // "" : the kind declares no status
		preserveAll bool
		in          string
		want        string
		dropped     []string
	}{
		{name: "nothing unknown", schema: deploymentLike,
			in:   `{"replicas":3,"conditions":[{"type":"Available","status":"True"}],"labels":{"a":"b"},"port":"http"}`,
			want: `{"replicas":3,"conditions":[{"type":"Available","status":"True"}],"labels":{"a":"b"},"port":"http"}`},
		{name: "unknown top-level field", schema: deploymentLike,
			in: `{"replicas":3,"extra":{"a":1}}`, want: `{"replicas":3}`, dropped: []string{".status.extra"}},
		{name: "unknown field in list items, reported once", schema: deploymentLike,
			in:      `{"conditions":[{"type":"A","status":"True","new":1},{"type":"B","status":"False","new":2}]}`,
			want:    `{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"False"}]}`,
			dropped: []string{".status.conditions[*].new"}},
		{name: "map values are checked against their schema", schema: deploymentLike,
			in: `{"sized":{"x":{"n":1,"m":2}}}`, want: `{"sized":{"x":{"n":1}}}`, dropped: []string{".status.sized.x.m"}},
		{name: "an object schema without fields keeps everything", schema: deploymentLike,
			in: `{"raw":{"anything":{"goes":true}}}`, want: `{"raw":{"anything":{"goes":true}}}`},
		{name: "preserve-unknown-fields keeps unknown fields at its level and prunes known ones", schema: deploymentLike,
			in: `{"open":{"mine":1,"known":{"a":1,"b":2}}}`, want: `{"open":{"mine":1,"known":{"a":1}}}`,
			dropped: []string{".status.open.known.b"}},
		{name: "a kind whose whole status preserves unknown fields drops nothing", schema: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`,
			in: `{"phase":"Ready","extra":{"a":1}}`, want: `{"phase":"Ready","extra":{"a":1}}`},
		{name: "preserveAll drops nothing", schema: deploymentLike, preserveAll: true,
			in: `{"extra":1}`, want: `{"extra":1}`},
		{name: "a kind without status drops every field", schema: "",
			in: `{"b":1,"a":2}`, want: `null`, dropped: []string{".status.a", ".status.b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tree := treeOf(t, tc.schema, tc.preserveAll)
			in := jsonMap(t, tc.in)
			before := jsonMap(t, tc.in)
			got, dropped := PruneStatus(in, tree)
			want := jsonMap(t, tc.want)
			if !equality.Semantic.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("pruned = %s, want %s", g, tc.want)
			}
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("dropped = %q, want %q", dropped, tc.dropped)
			}
			if !equality.Semantic.DeepEqual(in, before) {
				t.Errorf("the input was modified: %v", in)
			}
		})
	}
}

// deploymentStatusSchema is the status schema of apps/v1 Deployment as an apiserver publishes
// it (webhooks/check/testdata/apps-v1.json, from /openapi/v3/apis/apps/v1).
func deploymentStatusSchema(t testing.TB) *FieldTree {
	t.Helper()
	schemas, err := check.LoadSchemas(filepath.Join("..", "..", "..", "webhooks", "check", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := newFieldTrees().statusTree(schemas, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

const reportedDeploymentStatus = `{"observedGeneration":3,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
	"terminatingReplicas":0,"collisionCount":1,
	"conditions":[
		{"type":"Available","status":"True","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"MinimumReplicasAvailable","message":"ok"},
		{"type":"Progressing","status":"True","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"NewReplicaSetAvailable","message":"done"}]}`

// TestPruneStatusDeploymentSchema prunes against the real Deployment schema: every field of a
// current Deployment status is kept; fields of a newer version are dropped, at any depth.
func TestPruneStatusDeploymentSchema(t *testing.T) {
	tree := deploymentStatusSchema(t)
	if tree == nil || tree.none || len(tree.props) == 0 {
		t.Fatalf("Deployment status tree: %+v", tree)
	}
	in := jsonMap(t, reportedDeploymentStatus)
	got, dropped := PruneStatus(in, tree)
	if len(dropped) > 0 || !equality.Semantic.DeepEqual(got, in) {
		t.Errorf("a current Deployment status lost %q", dropped)
	}
	skewed := jsonMap(t, reportedDeploymentStatus)
	skewed["extra"] = map[string]any{"a": 1.0}
	skewed["conditions"].([]any)[1].(map[string]any)["observedGeneration"] = 3.0
	got, dropped = PruneStatus(skewed, tree)
	if want := []string{".status.conditions[*].observedGeneration", ".status.extra"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}
	if !equality.Semantic.DeepEqual(got, in) {
		g, _ := json.Marshal(got)
		t.Errorf("pruned skewed status = %s, want the current status", g)
	}
}

// BenchmarkPruneStatus: pruning a typical Deployment status (nothing to drop), against the
// json.Marshal of the same status that every status return already does.
func BenchmarkPruneStatus(b *testing.B) {
	tree := deploymentStatusSchema(b)
	var status map[string]any
	if err := json.Unmarshal([]byte(reportedDeploymentStatus), &status); err != nil {
		b.Fatal(err)
	}
	b.Run("prune", func(b *testing.B) {
		for b.Loop() {
			PruneStatus(status, tree)
		}
	})
	b.Run("baseline-json-marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(status); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPruneObjectServedCRDs prunes statusfold's writes of control.kubestellar.io objects against
// the CRDs that may be served: statusfold's own (nothing dropped) and KubeStellar v0.30.0's, which
// its controller-manager installs (aggregationErrors[].row/count and StatusCollector
// .status.conditions dropped, everything else kept).
func TestPruneObjectServedCRDs(t *testing.T) {
	combined := `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"CombinedStatus",
		"metadata":{"name":"u1.u2","namespace":"ns","labels":{"status.kubestellar.io/binding-policy":"p"}},
		"results":[{"name":"c","columnNames":["count","sum"],
			"rows":[{"columns":[{"type":"Number","float":"2"},{"type":"Object","object":{"any":{"thing":1}}}]}],
			"rowErrors":[{"wec":{"clusterId":"wec1"},"columnName":"sum","error":"e"}],
			"aggregationErrors":[{"columnName":"sum","error":"not a number","row":0,"count":2}]}]}`
	collector := `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"StatusCollector","metadata":{"name":"sc"},
		"status":{"observedGeneration":2,"errors":["e"],
			"conditions":[{"type":"Valid","status":"False","reason":"Invalid","message":"e","observedGeneration":2,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	ours, err := check.LoadSchemas(filepath.Join("..", "..", "..", "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	kubestellar, err := check.LoadSchemas(filepath.Join("..", "..", "..", "test", "integration", "controller", "testdata", "kubestellar-v0.30.0"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		served      *check.OfflineSchemas
		obj         string
		wantDropped []string
		want        func(m map[string]any) // the expected object, from the input
	}{
		{name: "CombinedStatus, statusfold's CRD", served: ours, obj: combined},
		{name: "StatusCollector, statusfold's CRD", served: ours, obj: collector},
		{name: "CombinedStatus, KubeStellar's CRD", served: kubestellar, obj: combined,
			wantDropped: []string{".results[*].aggregationErrors[*].count", ".results[*].aggregationErrors[*].row"},
			want: func(m map[string]any) {
				e := m["results"].([]any)[0].(map[string]any)["aggregationErrors"].([]any)[0].(map[string]any)
				delete(e, "row")
				delete(e, "count")
			}},
		{name: "StatusCollector, KubeStellar's CRD", served: kubestellar, obj: collector,
			wantDropped: []string{".status.conditions"},
			want:        func(m map[string]any) { delete(m["status"].(map[string]any), "conditions") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := jsonMap(t, tc.obj)
			want := jsonMap(t, tc.obj)
			if tc.want != nil {
				tc.want(want)
			}
			gvk := schema.FromAPIVersionAndKind(in["apiVersion"].(string), in["kind"].(string))
			trees := newFieldTrees()
			tree, root, err := trees.objectTree(tc.served, gvk)
			if err != nil || tree == nil {
				t.Fatalf("objectTree: %v, %v", tree, err)
			}
			if again, root2, _ := trees.objectTree(tc.served, gvk); again != tree || root2 != root {
				t.Errorf("the tree of an unchanged schema was compiled again")
			}
			got, dropped := pruneObject(in, tree)
			if !slices.Equal(dropped, tc.wantDropped) {
				t.Errorf("dropped %q, want %q", dropped, tc.wantDropped)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("pruned:\n%s\nwant:\n%s", g, w)
			}
			if !equality.Semantic.DeepEqual(in, jsonMap(t, tc.obj)) {
				t.Errorf("the input was modified")
			}
		})
	}
}

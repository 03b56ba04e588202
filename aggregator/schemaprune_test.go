package aggregator

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/kube-openapi/pkg/validation/spec"
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
			var s *spec.Schema
			if tc.schema != "" {
				s = schemaOf(t, tc.schema)
			}
			in := jsonMap(t, tc.in)
			before := jsonMap(t, tc.in)
			got, dropped := pruneStatus(in, s, tc.preserveAll)
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

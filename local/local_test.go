package local

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestSplitYAML(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []map[string]any // each document, parsed
	}{
		{"one document", "a: 1\n", []map[string]any{{"a": 1.0}}},
		{"leading separator and comment-only document dropped", "---\n# only a comment\n---\na: 1\n---\nb: 2\n",
			[]map[string]any{{"a": 1.0}, {"b": 2.0}}},
		{"comment before a document", "# says what\na: 1\n", []map[string]any{{"a": 1.0}}},
		{"separator with a comment", "a: 1\n--- # the second\nb: 2\n", []map[string]any{{"a": 1.0}, {"b": 2.0}}},
		{"CRLF line ends", "a: 1\r\n---\r\nb: 2\r\n", []map[string]any{{"a": 1.0}, {"b": 2.0}}},
		{"--- inside a block scalar is content", "s: |\n  one\n  ---\n  two\nx: 1\n", []map[string]any{{"s": "one\n---\ntwo\n", "x": 1.0}}},
		{"a value that starts with ---", "a: 1\nb: \"---\"\n", []map[string]any{{"a": 1.0, "b": "---"}}},
		{"no trailing newline", "a: 1\n---\nb: 2", []map[string]any{{"a": 1.0}, {"b": 2.0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := splitYAML([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []map[string]any
			for _, d := range docs {
				var m map[string]any
				if err := yaml.Unmarshal(d, &m); err != nil {
					t.Fatalf("document %q: %v", d, err)
				}
				got = append(got, m)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEmbeddedCRDs(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	want := []string{
		"aggregationpolicies.policy.statusfold.dev",
		"bindingpolicies.control.kubestellar.io",
		"bindings.control.kubestellar.io",
		"combinedstatuses.control.kubestellar.io",
		"contentclassifiers.control.kubestellar.io",
		"managedclusters.cluster.open-cluster-management.io",
		"statuscollectors.control.kubestellar.io",
		"workstatuses.control.kubestellar.io",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("embedded CRDs %v, want %v", names, want)
	}
}

// TestSampleObjectsOrder: namespaces first, then what BindingPolicies and workloads refer to,
// BindingPolicies last (so that their collectors exist when the webhook checks them).
func TestSampleObjectsOrder(t *testing.T) {
	objs, err := SampleObjects()
	if err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{"Namespace": 0, "StatusCollector": 1, "ContentClassifier": 1, "BindingPolicy": 3}
	last := -1
	kinds := map[string]int{}
	for _, o := range objs {
		r, ok := rank[o.GetKind()]
		if !ok {
			r = 2
		}
		if r < last {
			t.Errorf("%s %s comes after a later group", o.GetKind(), o.GetName())
		}
		last = r
		kinds[o.GetKind()]++
	}
	want := map[string]int{
		"Namespace": 1, "StatusCollector": 12, "ContentClassifier": 1, "Deployment": 2, "Job": 1,
		"AggregationPolicy": 1, "BindingPolicy": 3,
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("sample kinds %v, want %v", kinds, want)
	}
	for _, o := range objs {
		if strings.TrimSpace(o.GetName()) == "" {
			t.Errorf("sample %s without a name", o.GetKind())
		}
	}
}

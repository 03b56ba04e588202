package local

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestSplitYAML(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"one document", "a: 1\n", []string{"\na: 1\n"}},
		{"leading separator and comment-only document dropped", "---\n# only a comment\n---\na: 1\n---\nb: 2\n", []string{"\na: 1", "\nb: 2\n"}},
		{"comment before a document kept with it", "# says what\na: 1\n", []string{"\n# says what\na: 1\n"}},
	}
	for _, tc := range cases {
		var got []string
		for _, d := range splitYAML([]byte(tc.in)) {
			got = append(got, string(d))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
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

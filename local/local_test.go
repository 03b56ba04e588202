package local

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestSplitYAML(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string // each document as JSON
		wantErr string
	}{
		{name: "one document", in: "a: 1\n", want: []string{`{"a":1}`}},
		{name: "no trailing newline", in: "a: 1", want: []string{`{"a":1}`}},
		{name: "leading separator", in: "---\na: 1\n---\nb: 2\n", want: []string{`{"a":1}`, `{"b":2}`}},
		{name: "separator followed by a comment", in: "a: 1\n--- # the second\nb: 2\n---\t#tab\nc: 3\n",
			want: []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}},
		{name: "empty and comment-only documents dropped",
			in:   "---\n---\n\n---\n# only a comment\n---\na: 1\n---\n   \n---\n",
			want: []string{`{"a":1}`}},
		{name: "comment before a document", in: "# says what\na: 1 # and this\n", want: []string{`{"a":1}`}},
		{name: "CRLF line ends", in: "a: 1\r\n---\r\nb: |\r\n  x\r\n  y\r\n---\r\n",
			want: []string{`{"a":1}`, `{"b":"x\ny\n"}`}},
		{name: "literal block scalar keeps separator-like and comment-like lines",
			in:   "s: |\n  ---\n  # not a comment\n  --- # nor this\nt: 2\n---\nu: 3\n",
			want: []string{`{"s":"---\n# not a comment\n--- # nor this\n","t":2}`, `{"u":3}`}},
		{name: "folded block scalar", in: "f: >\n  one\n  two\n\n  three\n", want: []string{`{"f":"one two\nthree\n"}`}},
		{name: "keep chomping keeps the blank lines before the separator",
			in: "k: |+\n  x\n\n---\nb: 1\n", want: []string{`{"k":"x\n\n"}`, `{"b":1}`}},
		{name: "strip chomping", in: "k: |-\n  x\n\n---\nb: 1\n", want: []string{`{"k":"x"}`, `{"b":1}`}},
		{name: "dashes inside a line are not a separator", in: "a: x---y\nb: '---'\n", want: []string{`{"a":"x---y","b":"---"}`}},
		{name: "text after the separator is an error", in: "a: 1\n---x: 2\n", wantErr: "invalid Yaml document separator: x: 2"},
		{name: "invalid YAML names its document", in: "a: 1\n---\nb: [\n", wantErr: "document 2: "},
		{name: "empty input", in: "", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := splitYAML([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, string(d))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
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

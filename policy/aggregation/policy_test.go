package aggregation

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

func policy(name, kind, src string, examples ...policyv1alpha1.AggregationExample) *policyv1alpha1.AggregationPolicy {
	return &policyv1alpha1.AggregationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.AggregationPolicySpec{
			Target:   policyv1alpha1.TargetKind{Group: "example.com", Kind: kind},
			Rego:     src,
			Examples: examples,
		},
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func example(name string, want string) policyv1alpha1.AggregationExample {
	return policyv1alpha1.AggregationExample{
		Name:   name,
		Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"generation":1}}`)},
		WECs: []policyv1alpha1.ExampleWEC{
			{Name: "a", Status: raw(`{"n":1,"phase":"Up"}`)},
			{Name: "b", Status: raw(`{"n":5,"phase":"Up"}`)},
		},
		ExpectedStatus: raw(want),
	}
}

const maxModule = `package widgets

combine := {"n": "max"}
`

func TestValidatePolicy(t *testing.T) {
	rego := field.NewPath("spec", "rego")
	cases := []struct {
		name string
		p    *policyv1alpha1.AggregationPolicy
		want field.ErrorList // compared by type, field and a substring of the detail
		subs []string
	}{{
		name: "valid combine module with a passing example",
		p:    policy("ok", "Widget", maxModule, example("max", `{"n":5,"phase":"Up"}`)),
	}, {
		name: "valid full-Rego status module",
		p: policy("full", "Widget", `package widgets
status := {"count": count(input.wecs)}
`, example("count", `{"count":2}`)),
	}, {
		name: "syntax error with line and column",
		p:    policy("syntax", "Widget", "package widgets\n\ncombine := {\"n\": \n"),
		want: field.ErrorList{field.Invalid(rego, "(Rego source)", "")},
		subs: []string{"line 4:0: rego_parse_error: unexpected eof token"},
	}, {
		name: "no required rule",
		p:    policy("norule", "Widget", "package widgets\n\nfoo := 1\n"),
		want: field.ErrorList{field.Invalid(rego, "(Rego source)", "")},
		subs: []string{`line 1:1: rego_missing_rule: package widgets defines neither "combine"`},
	}, {
		name: "http.send is not in the sandbox",
		p: policy("net", "Widget", `package widgets
combine := {"n": "max"}
x := http.send({"method": "get", "url": "http://example.com"})
`),
		want: field.ErrorList{field.Invalid(rego, "(Rego source)", "")},
		subs: []string{"line 3:6: rego_type_error: undefined function http.send"},
	}, {
		name: "time.now_ns is not in the sandbox",
		p:    policy("clock", "Widget", "package widgets\ncombine := {\"n\": \"max\"}\nt := time.now_ns()\n"),
		want: field.ErrorList{field.Invalid(rego, "(Rego source)", "")},
		subs: []string{"undefined function time.now_ns"},
	}, {
		name: "a failing example",
		p:    policy("fail", "Widget", maxModule, example("wrong", `{"n":1,"phase":"Up"}`)),
		want: field.ErrorList{field.Invalid(field.NewPath("spec", "examples").Index(0).Child("expectedStatus"), "", "")},
		subs: []string{`example wrong: the policy produced {"n":5,"phase":"Up"}`},
	}, {
		name: "unknown combiner",
		p:    policy("badop", "Widget", "package widgets\ncombine := {\"n\": \"mx\"}\n"),
		want: field.ErrorList{field.Invalid(rego, "(Rego source)", "")},
		subs: []string{`combine["n"]: unknown combiner "mx"`},
	}, {
		name: "missing target kind and source",
		p:    policy("empty", "", ""),
		want: field.ErrorList{field.Required(field.NewPath("spec", "target", "kind"), ""), field.Required(rego, "")},
		subs: []string{"", ""},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidatePolicy(tc.p)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i].Type != tc.want[i].Type || got[i].Field != tc.want[i].Field || !strings.Contains(got[i].Detail, tc.subs[i]) {
					t.Errorf("error %d: got %v, want %s at %s containing %q", i, got[i], tc.want[i].Type, tc.want[i].Field, tc.subs[i])
				}
			}
		})
	}
}

func TestSetPolicyOverridesAndRemove(t *testing.T) {
	e := newEngine(t)
	wecs := []WEC{{Name: "a", Status: js(t, `{"n":1}`)}, {Name: "b", Status: js(t, `{"n":5}`)}}
	obj := js(t, `{}`)
	result := func() string {
		got, err := e.Returned(gkWidget, obj, wecs)
		if err != nil {
			t.Fatal(err)
		}
		return compactJSON(got)
	}
	s := e.NewState(gkWidget)
	s.SetObject(obj)
	for _, w := range wecs {
		s.UpsertWEC(w)
	}
	stateResult := func() string {
		got, err := s.Result()
		if err != nil {
			t.Fatal(err)
		}
		return compactJSON(got)
	}
	steps := []struct {
		name string
		do   func() field.ErrorList
		errs bool
		want string
	}{
		{"generic built-in: min", func() field.ErrorList { return nil }, false, `{"n":1}`},
		{"valid override: max", func() field.ErrorList { return e.SetPolicy(policy("p-max", "Widget", maxModule)) }, false, `{"n":5}`},
		{"invalid policy rejected, override stays", func() field.ErrorList {
			return e.SetPolicy(policy("a-bad", "Widget", "package x\n"))
		}, true, `{"n":5}`},
		{"smaller name wins", func() field.ErrorList {
			return e.SetPolicy(policy("a-sum", "Widget", "package y\ncombine := {\"n\": \"sum\"}\n"))
		}, false, `{"n":6}`},
		{"remove it: the other override", func() field.ErrorList { e.RemovePolicy("a-sum"); return nil }, false, `{"n":5}`},
		{"remove all: built-in again", func() field.ErrorList { e.RemovePolicy("p-max"); return nil }, false, `{"n":1}`},
	}
	for _, st := range steps {
		errs := st.do()
		if (len(errs) > 0) != st.errs {
			t.Fatalf("%s: errors %v", st.name, errs)
		}
		if got := result(); got != st.want {
			t.Errorf("%s: Returned %s, want %s", st.name, got, st.want)
		}
		if got := stateResult(); got != st.want {
			t.Errorf("%s: State %s, want %s", st.name, got, st.want)
		}
	}
}

// TestValidatePolicyContextBounded: the admission check of a policy stops when the request's
// context ends — a static `combine` that would compute for seconds, and examples — instead of
// running to its own (longer) time bounds.
func TestValidatePolicyContextBounded(t *testing.T) {
	const slowCombine = `package widgets

combine := {"n": "max"} if {
	count([x | some i in numbers.range(1, 5000); some j in numbers.range(1, 5000); x := i * j]) > 0
}
`
	const slowStatus = `package widgets

status := {"n": count([x | some i in numbers.range(1, 5000); some j in numbers.range(1, 5000); x := i * j])}
`
	example := func(name string) policyv1alpha1.AggregationExample {
		return policyv1alpha1.AggregationExample{Name: name,
			Object: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)},
			WECs: []policyv1alpha1.ExampleWEC{ // two WECs: an aggregate, the module runs
				{Name: "a", Status: &runtime.RawExtension{Raw: []byte(`{"n":1}`)}},
				{Name: "b", Status: &runtime.RawExtension{Raw: []byte(`{"n":1}`)}}},
			ExpectedStatus: &runtime.RawExtension{Raw: []byte(`{"n":1}`)}}
	}
	cases := []struct {
		name, rego string
		examples   []policyv1alpha1.AggregationExample
		wantErr    string
	}{
		{name: "static combine", rego: slowCombine, wantErr: "deadline exceeded"},
		{name: "examples", rego: slowStatus, examples: []policyv1alpha1.AggregationExample{example("e1"), example("e2"), example("e3")},
			wantErr: "not run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "slow"},
				Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "example.com", Kind: "Widget"},
					Rego: tc.rego, Examples: tc.examples}}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			errs := ValidatePolicyContext(ctx, p)
			took := time.Since(start)
			if took > 900*time.Millisecond {
				t.Errorf("validation took %s with a 300ms context, want it to stop with the context", took)
			}
			if errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) {
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
		})
	}
}

package aggregation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

var (
	gkDeployment = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	gkWidget     = schema.GroupKind{Group: "example.com", Kind: "Widget"}
)

func newEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	e, err := NewEngine(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// js parses a JSON object literal (test inputs read as the YAML users write).
func js(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func applied(gen int64) *controlv1alpha1.StatusDetails {
	return &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true}
}

func wecGen(d *controlv1alpha1.StatusDetails, g int64) *controlv1alpha1.StatusDetails {
	d.WECGeneration = &g
	return d
}

func TestReturned(t *testing.T) {
	e := newEngine(t)
	obj := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":3},"spec":{"replicas":3}}`
	cases := []struct {
		name string
		gk   schema.GroupKind
		obj  string
		wecs []WEC
		want string // JSON; "null" for nothing
	}{{
		name: "no WEC: nothing",
		gk:   gkDeployment, obj: obj,
		want: "null",
	}, {
		name: "no WEC has reported: nothing",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{{Name: "a", Details: applied(3)}, {Name: "b"}},
		want: "null",
	}, {
		name: "one current WEC: a copy with the WDS generation",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{{Name: "a", Details: wecGen(applied(3), 7), Status: js(t, `{"observedGeneration":7,"replicas":3,"custom":{"x":"y"}}`)}},
		want: `{"observedGeneration":3,"replicas":3,"custom":{"x":"y"}}`,
	}, {
		name: "one WEC whose status has not observed its copy's generation: one below",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{{Name: "a", Details: wecGen(applied(3), 7), Status: js(t, `{"observedGeneration":6,"replicas":3}`)}},
		want: `{"observedGeneration":2,"replicas":3}`,
	}, {
		name: "one WEC without statusDetails: not known current",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{{Name: "a", Status: js(t, `{"observedGeneration":9}`)}},
		want: `{"observedGeneration":2}`,
	}, {
		name: "one WEC that has not applied the generation",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{{Name: "a", Details: &controlv1alpha1.StatusDetails{LastGeneration: 3}, Status: js(t, `{"observedGeneration":1}`)}},
		want: `{"observedGeneration":2}`,
	}, {
		name: "deployment over three WECs, one lagging",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
				"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastTransitionTime":"2025-11-01T10:00:00Z"},
				              {"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","lastTransitionTime":"2025-11-01T10:00:00Z"}]}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":4,"updatedReplicas":1,"readyReplicas":3,"availableReplicas":3,"unavailableReplicas":1,
				"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastTransitionTime":"2025-11-01T09:00:00Z"},
				              {"type":"Progressing","status":"True","reason":"ReplicaSetUpdated","lastTransitionTime":"2025-11-01T11:00:00Z"}]}`)},
			{Name: "c", Details: applied(2), Status: js(t, `{"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3}`)},
		},
		want: `{"observedGeneration":2,"replicas":4,"updatedReplicas":1,"readyReplicas":3,"availableReplicas":3,"unavailableReplicas":1,
			"conditions":[{"type":"Available","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T10:00:00Z"},
			              {"type":"Progressing","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T11:00:00Z"}]}`,
	}, {
		name: "a missing count reads as 0 (Argo CD's reading)",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":3,"updatedReplicas":3}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":2}`)},
		},
		want: `{"observedGeneration":3,"replicas":3,"updatedReplicas":0}`,
	}, {
		name: "ProgressDeadlineExceeded survives: reason from the newest entry that agrees",
		gk:   gkDeployment, obj: obj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"too slow","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
		},
		want: `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"too slow","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`,
	}, {
		name: "generic: numbers min, bools and, strings agree, shapes must match",
		gk:   gkWidget, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"n":3,"f":2.5,"ok":true,"ready":true,"phase":"Up","zone":"x","m":{"a":1,"b":"s"},"l":[1,2],"l2":[1],"mixed":1}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"n":2,"f":4,"ok":false,"ready":true,"phase":"Up","zone":"y","m":{"a":0,"b":"s"},"l":[3,0],"l2":[1,2],"mixed":"1"}`)},
			{Name: "c", Details: applied(1)},
		},
		want: `{"n":2,"f":2.5,"ok":false,"ready":true,"phase":"Up","m":{"a":0,"b":"s"},"l":[1,0]}`,
	}, {
		name: "generic conditions: three-valued, negative types any-True, missing counts Unknown",
		gk:   gkWidget, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"conditions":[
				{"type":"Ready","status":"True","reason":"A","lastTransitionTime":"2025-11-01T00:00:00Z"},
				{"type":"Degraded","status":"False","reason":"Fine","lastTransitionTime":"2025-11-01T00:00:00Z"},
				{"type":"Synced","status":"True","reason":"S","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"conditions":[
				{"type":"Ready","status":"True","reason":"B","lastTransitionTime":"2025-11-03T00:00:00Z"},
				{"type":"Degraded","status":"True","reason":"Broken","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
		},
		want: `{"conditions":[
			{"type":"Ready","status":"True","reason":"B","lastTransitionTime":"2025-11-03T00:00:00Z"},
			{"type":"Degraded","status":"True","reason":"Broken","lastTransitionTime":"2025-11-02T00:00:00Z"},
			{"type":"Synced","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`,
	}, {
		name: "daemonset: targets summed, counts clamped to each WEC's target",
		gk:   schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"desiredNumberScheduled":3,"updatedNumberScheduled":5,"numberAvailable":3}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":1,"numberAvailable":2}`)},
		},
		want: `{"observedGeneration":1,"desiredNumberScheduled":5,"updatedNumberScheduled":4,"numberAvailable":5}`,
	}, {
		name: "statefulset: an unfinished WEC's revision pair",
		gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-3"}`)},
		},
		want: `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-3"}`,
	}, {
		name: "statefulset: all finished, one revision",
		gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-2"}`)},
		},
		want: `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`,
	}, {
		name: "job: Complete only when all completed, Failed when any failed",
		gk:   schema.GroupKind{Group: "batch", Kind: "Job"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"succeeded":1,"conditions":[{"type":"Complete","status":"True","reason":"Done","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
			{Name: "b", Status: js(t, `{"failed":2,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
		},
		// The apiserver requires FailureTarget=True with Failed=True and a startTime on a finished
		// Job: both are filled in from the Failed entry (no WEC reported them).
		want: `{"succeeded":0,"failed":2,"startTime":"2025-11-02T00:00:00Z","conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"},{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`,
	}, {
		name: "service: ingress union only when every WEC has one",
		gk:   schema.GroupKind{Kind: "Service"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}`)},
			{Name: "b", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"2.2.2.2"},{"ip":"1.1.1.1"}]}}`)},
		},
		want: `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"},{"ip":"2.2.2.2"}]}}`,
	}, {
		name: "service: one WEC without ingress empties the list",
		gk:   schema.GroupKind{Kind: "Service"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}`)},
			{Name: "b", Status: js(t, `{"loadBalancer":{}}`)},
		},
		want: `{"loadBalancer":{}}`,
	}, {
		name: "pvc: worst phase",
		gk:   schema.GroupKind{Kind: "PersistentVolumeClaim"}, obj: `{}`,
		wecs: []WEC{{Name: "a", Status: js(t, `{"phase":"Bound"}`)}, {Name: "b", Status: js(t, `{"phase":"Lost"}`)}, {Name: "c", Status: js(t, `{"phase":"Pending"}`)}},
		want: `{"phase":"Lost"}`,
	}, {
		name: "pod: the worst WEC's whole status",
		gk:   schema.GroupKind{Kind: "Pod"}, obj: `{"spec":{"restartPolicy":"Always"}}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`)},
			{Name: "b", Status: js(t, `{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}`)},
		},
		want: `{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Returned(tc.gk, js(t, tc.obj), tc.wecs)
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			wm, _ := want.(map[string]any)
			if !SameJSON(got, wm) {
				t.Errorf("got  %s\nwant %s", compactJSON(got), compactJSON(wm))
			}
		})
	}
}

// TestStateIncremental checks that a State fed changes one at a time gives what Returned gives
// for the same final set of WECs.
func TestStateIncremental(t *testing.T) {
	e := newEngine(t)
	obj := js(t, `{"metadata":{"generation":2},"spec":{"replicas":3}}`)
	st := func(upd, avail int) map[string]any {
		return map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(upd), "availableReplicas": int64(avail)}
	}
	s := e.NewState(gkDeployment)
	s.SetObject(obj)
	steps := []struct {
		name   string
		do     func()
		expect []WEC
	}{
		{"add a", func() { s.UpsertWEC(WEC{Name: "a", Details: applied(2), Status: st(3, 3)}) }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}}},
		{"add c", func() { s.UpsertWEC(WEC{Name: "c", Details: applied(2), Status: st(1, 1)}) }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}, {Name: "c", Details: applied(2), Status: st(1, 1)}}},
		{"add b lagging", func() { s.UpsertWEC(WEC{Name: "b", Details: applied(1), Status: st(2, 3)}) }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}, {Name: "b", Details: applied(1), Status: st(2, 3)}, {Name: "c", Details: applied(2), Status: st(1, 1)}}},
		{"c catches up", func() { s.UpsertWEC(WEC{Name: "c", Details: applied(2), Status: st(3, 3)}) }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}, {Name: "b", Details: applied(1), Status: st(2, 3)}, {Name: "c", Details: applied(2), Status: st(3, 3)}}},
		{"remove b", func() { s.RemoveWEC("b") }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}, {Name: "c", Details: applied(2), Status: st(3, 3)}}},
		{"remove missing", func() { s.RemoveWEC("zzz") }, []WEC{{Name: "a", Details: applied(2), Status: st(3, 3)}, {Name: "c", Details: applied(2), Status: st(3, 3)}}},
	}
	for _, step := range steps {
		step.do()
		got, err := s.Result()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		want, err := e.Returned(gkDeployment, obj, step.expect)
		if err != nil {
			t.Fatal(err)
		}
		if !SameJSON(got, want) {
			t.Errorf("%s: incremental %s, from scratch %s", step.name, compactJSON(got), compactJSON(want))
		}
	}
}

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

func TestBounds(t *testing.T) {
	wecs := []WEC{{Name: "a", Status: map[string]any{"n": int64(1)}}, {Name: "b", Status: map[string]any{"n": int64(2)}}}
	t.Run("time", func(t *testing.T) {
		e := newEngine(t, WithTimeout(50*time.Millisecond))
		if errs := e.SetPolicy(policy("slow", "Widget", `package slow
status := {"n": count([x | some x in numbers.range(1, 100000000); x % 7 == 0])}
`)); len(errs) > 0 {
			t.Fatal(errs)
		}
		start := time.Now()
		_, err := e.Returned(gkWidget, map[string]any{}, wecs)
		if err == nil || !strings.Contains(err.Error(), "exceeded 50ms") {
			t.Fatalf("err = %v, want a time-bound error", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("evaluation was not stopped: %s", d)
		}
	})
	t.Run("output size", func(t *testing.T) {
		e := newEngine(t, WithMaxOutputBytes(1000))
		if errs := e.SetPolicy(policy("big", "Widget", `package big
status := {"s": concat("", [x | some i in numbers.range(1, 2000); x := "x"])}
`)); len(errs) > 0 {
			t.Fatal(errs)
		}
		_, err := e.Returned(gkWidget, map[string]any{}, wecs)
		if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
			t.Fatalf("err = %v, want an output-size error", err)
		}
	})
}

func TestSandboxCapabilities(t *testing.T) {
	c := SandboxCapabilities()
	have := map[string]bool{}
	for _, b := range c.Builtins {
		have[b.Name] = true
	}
	for _, name := range []string{"http.send", "net.lookup_ip_addr", "net.cidr_contains", "time.now_ns", "opa.runtime", "rand.intn", "uuid.rfc4122",
		"json.match_schema", "json.verify_schema", "crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_and_verify_certificates_with_options", "io.jwt.decode_verify"} {
		if have[name] {
			t.Errorf("%s is allowed", name)
		}
	}
	for _, name := range []string{"count", "object.get", "startswith", "time.parse_rfc3339_ns", "numbers.range"} {
		if !have[name] {
			t.Errorf("%s is missing", name)
		}
	}
}

// TestBuiltinRegoTests runs the Rego unit tests beside the built-in modules (also run by
// `statusfold policy test`).
func TestBuiltinRegoTests(t *testing.T) {
	results, err := RunRegoTests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 12 {
		t.Fatalf("only %d Rego tests found", len(results))
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("%s.%s: %v %v", r.Package, r.Name, r.Fail, r.Error)
		}
	}
}

// TestConcurrentUse runs Returned from several goroutines while policies come and go (run with
// -race); every result must be one of the two valid answers.
func TestConcurrentUse(t *testing.T) {
	e := newEngine(t)
	wecs := []WEC{{Name: "a", Status: map[string]any{"n": int64(1)}}, {Name: "b", Status: map[string]any{"n": int64(5)}}}
	done := make(chan struct{})
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				got, err := e.Returned(gkWidget, map[string]any{}, wecs)
				if err != nil {
					errs <- err.Error()
					return
				}
				if n := got["n"]; n != int64(1) && n != int64(5) {
					errs <- fmt.Sprintf("n = %v", n)
					return
				}
			}
		}()
	}
	for i := range 50 {
		if i%2 == 0 {
			if errs := e.SetPolicy(policy("p-max", "Widget", maxModule)); len(errs) > 0 {
				t.Fatal(errs)
			}
		} else {
			e.RemovePolicy("p-max")
		}
	}
	for range 4 {
		<-done
	}
	close(errs)
	for msg := range errs {
		t.Error(msg)
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

package aggregation

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
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

// TestReturned checks Returned over hand-written cases (returned_cases_test.go): nothing, a copy
// of one WEC, and aggregates under the built-in modules and the generic rules.
func TestReturned(t *testing.T) {
	e := newEngine(t)
	var cases []returnedCase
	for _, group := range [][]returnedCase{
		returnedCopyCases(t), returnedDeploymentCases(t), returnedGenericCases(t),
		returnedWorkloadCases(t), returnedOtherKindCases(t),
	} {
		cases = append(cases, group...)
	}
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

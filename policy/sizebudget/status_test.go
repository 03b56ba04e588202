package sizebudget

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/objview"
)

var (
	deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	podGK        = schema.GroupKind{Group: "", Kind: "Pod"}
	customGK     = schema.GroupKind{Group: "example.com", Kind: "Widget"}
)

// randomObject is a Deployment, Pod or custom object whose status has lists of random entries,
// some of them unhealthy (a crashing container, a failed condition).
func randomObject(r *rand.Rand) (schema.GroupKind, map[string]any) {
	pad := func() string { return strings.Repeat("p", r.IntN(3000)) }
	var items []any
	for i := range r.IntN(40) {
		items = append(items, map[string]any{"name": fmt.Sprintf("i%d", i), "note": pad()})
	}
	meta := map[string]any{"name": "o", "namespace": "ns", "generation": int64(2)}
	switch r.IntN(3) {
	case 0:
		cond := "True"
		if r.IntN(3) == 0 {
			cond = "False"
		}
		return deploymentGK, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
			"spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3),
				"availableReplicas": int64(r.IntN(4)), "readyReplicas": int64(3), "notes": items,
				"conditions": []any{map[string]any{"type": "Progressing", "status": cond, "reason": "ProgressDeadlineExceeded"}}}}
	case 1:
		var cs []any
		for i := range 1 + r.IntN(30) {
			st := map[string]any{"running": map[string]any{}}
			if r.IntN(8) == 0 {
				st = map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}
			}
			cs = append(cs, map[string]any{"name": fmt.Sprintf("c%d", i), "ready": true, "restartCount": int64(0),
				"image": "i", "imageID": "i", "state": st, "message": pad()})
		}
		return podGK, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
			"spec": map[string]any{"restartPolicy": "Always", "containers": []any{}},
			"status": map[string]any{"phase": "Running", "containerStatuses": cs,
				"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	}
	return customGK, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta,
		"status": map[string]any{"items": items, "phase": "Ready"}}
}

func rankOf(t *testing.T, gk schema.GroupKind, obj map[string]any) int {
	r, ok, err := health.Of(gk, obj)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return r.Status.Rank()
}

// TestStatusProperties: same input → same output; within budget; list entries only from the
// end, conditions kept; never healthier than the untrimmed object by Argo CD's health checks.
func TestStatusProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	counts := map[StatusOutcome]int{}
	for n := range 400 {
		gk, obj := randomObject(r)
		budget := 2000 + r.IntN(encodedLen(obj)+1)
		before := objview.CopyTree(obj)
		st, tr := Status(gk, obj, budget)
		if !reflect.DeepEqual(obj, before) {
			t.Fatalf("case %d: input modified", n)
		}
		st2, tr2 := Status(gk, objview.CopyTree(obj).(map[string]any), budget)
		if !reflect.DeepEqual(st, st2) || !reflect.DeepEqual(tr, tr2) {
			t.Fatalf("case %d: same input, different output", n)
		}
		counts[tr.Outcome]++
		if tr.Outcome == StatusNone {
			if st != nil {
				t.Fatalf("case %d: none outcome with a status", n)
			}
			continue
		}
		if got := encodedLen(with(obj, st)); got > budget {
			t.Fatalf("case %d: %s: %d bytes over budget %d", n, tr.Outcome, got, budget)
		}
		if rankOf(t, gk, with(obj, st)) < rankOf(t, gk, obj) {
			t.Fatalf("case %d: %s status looks healthier than the untrimmed one", n, tr.Outcome)
		}
		if tr.Outcome == StatusCut {
			checkCut(t, obj["status"].(map[string]any), st)
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts[StatusCut] == 0 || counts[StatusFallback] == 0 || counts[StatusWhole] == 0 {
		t.Fatalf("the cases did not reach every outcome: %v", counts)
	}
}

// checkCut checks that each list of cut is a non-empty prefix of the same list in orig and that
// the conditions are orig's plus the marker.
func checkCut(t *testing.T, orig, cut map[string]any) {
	t.Helper()
	for k, v := range orig {
		l, ok := v.([]any)
		if !ok {
			if !reflect.DeepEqual(cut[k], v) {
				t.Fatalf("field %s changed", k)
			}
			continue
		}
		c := cut[k].([]any)
		if k == "conditions" {
			if len(c) != len(l)+1 || !reflect.DeepEqual(c[:len(l)], l) {
				t.Fatalf("conditions changed: %v", c)
			}
			continue
		}
		if len(c) == 0 && len(l) > 0 || !reflect.DeepEqual(c, l[:len(c)]) {
			t.Fatalf("list %s not a non-empty prefix", k)
		}
	}
}

// TestStatusMonotone: more list entries never yield an object over budget.
func TestStatusMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 100 {
		gk, obj := randomObject(r)
		budget := 8000 + r.IntN(40000)
		for range 5 {
			st, tr := Status(gk, obj, budget)
			if tr.Outcome != StatusNone && encodedLen(with(obj, st)) > budget {
				t.Fatalf("case %d: over budget", n)
			}
			s := obj["status"].(map[string]any)
			for k, v := range s {
				if l, ok := v.([]any); ok && k != "conditions" {
					s[k] = append(l, map[string]any{"more": strings.Repeat("m", r.IntN(5000))})
				}
			}
		}
	}
}

// TestStatusOfAgreesWithStatus: with the size of the object without its status given, the
// outcome is the same as Status's.
func TestStatusOfAgreesWithStatus(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for n := range 200 {
		gk, obj := randomObject(r)
		budget := 2000 + r.IntN(encodedLen(obj)+1)
		rest := with(obj, nil)
		delete(rest, "status")
		want, wt := Status(gk, obj, budget)
		got, gt := StatusOf(gk, obj, encodedLen(rest), budget)
		if !reflect.DeepEqual(got, want) || gt.Outcome != wt.Outcome {
			t.Fatalf("case %d: StatusOf %s, Status %s", n, gt.Outcome, wt.Outcome)
		}
	}
}

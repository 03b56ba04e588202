package aggregation

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The apiserver's rules for a Job's .status (k8s.io/kubernetes pkg/apis/batch/validation,
// validateJobStatus, with the options the batch registry strategy turns on; checked against
// kube-apiserver v1.37.2), restated in this test for single objects. The aggregate is written to
// the WDS object's status subresource, so it must satisfy them whatever the WECs reported.
func jobStatusErrors(st map[string]any) []string {
	conds, _ := st["conditions"].([]any)
	isTrue := func(typ string) bool {
		for _, x := range conds {
			c, _ := x.(map[string]any)
			if c["type"] == typ && c["status"] == "True" {
				return true
			}
		}
		return false
	}
	count := func(k string) int64 { return toNum(st[k]).i }
	complete, failed := isTrue("Complete"), isTrue("Failed")
	scm, ft := isTrue("SuccessCriteriaMet"), isTrue("FailureTarget")
	finished := complete || failed
	var errs []string
	bad := func(cond bool, msg string) {
		if cond {
			errs = append(errs, msg)
		}
	}
	for _, k := range []string{"active", "succeeded", "failed", "ready", "terminating"} {
		bad(count(k) < 0, k+" must be non-negative")
	}
	bad(complete && failed, "cannot set Complete=True and Failed=True conditions")
	bad(complete && ft, "cannot set Complete=True and FailureTarget=True conditions")
	bad(scm && failed, "cannot set SuccessCriteriaMet=True and Failed=True conditions")
	bad(scm && ft, "cannot set SuccessCriteriaMet=True and FailureTarget=True conditions")
	_, hasCT := st["completionTime"]
	_, hasST := st["startTime"]
	bad(hasCT && !complete, "cannot set completionTime when there is no Complete=True condition")
	bad(complete && !hasCT, "completionTime is required for Complete jobs")
	bad(failed && !ft, "cannot set Failed=True condition without the FailureTarget=True condition")
	bad(complete && !scm, "cannot set Complete=True condition without the SuccessCriteriaMet=True condition")
	bad(finished && count("active") > 0, "active>0 is invalid for finished job")
	bad(finished && count("terminating") > 0, "terminating>0 is invalid for finished job")
	bad(finished && !hasST, "startTime is required for finished job")
	if u, ok := st["uncountedTerminatedPods"].(map[string]any); ok && finished {
		s, _ := u["succeeded"].([]any)
		f, _ := u["failed"].([]any)
		bad(len(s)+len(f) > 0, "uncountedTerminatedPods needs to be empty for finished job")
	}
	if _, has := st["ready"]; has {
		bad(count("ready") > count("active"), "cannot set more ready pods than active")
	}
	if hasST && hasCT {
		s, err1 := time.Parse(time.RFC3339, fmt.Sprint(st["startTime"]))
		c, err2 := time.Parse(time.RFC3339, fmt.Sprint(st["completionTime"]))
		bad(err1 != nil || err2 != nil, "startTime/completionTime must be RFC 3339 times")
		bad(err1 == nil && err2 == nil && c.Before(s), "completionTime must be equal to or after startTime")
	}
	return errs
}

// earliestStartTime is the earliest startTime among the WECs, "" when none has one.
func earliestStartTime(wecs []WEC) string {
	best := ""
	for _, w := range wecs {
		if s, ok := w.Status["startTime"].(string); ok && s != "" && (best == "" || s < best) {
			best = s
		}
	}
	return best
}

func jobCond(typ, status, reason, ltt string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": typ + " " + reason, "lastTransitionTime": ltt}
}

// TestJobAggregateValid: over the property test's generated Job cases (same generator and seed),
// the aggregate satisfies the apiserver's Job status rules, and its startTime is the earliest
// startTime of the WECs whenever some WEC has one.
func TestJobAggregateValid(t *testing.T) {
	e, err := NewEngine(WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "batch", Kind: "Job"}
	g := generators[gk]
	cases := envInt("STATUSFOLD_PROPERTY_CASES", 1000)
	seed := uint64(envInt("STATUSFOLD_PROPERTY_SEED", 1))
	r := rand.New(rand.NewPCG(seed, uint64(len(gk.Kind))))
	for c := range cases {
		gen := 1 + r.Int64N(5)
		obj := map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "w", "namespace": "ns", "generation": gen},
			"spec":     g.spec(r),
		}
		wecs := genWECs(r, g, obj, gen, 2+r.IntN(4), healthyWEC(t, gk, obj, gen))
		reported := 0
		for _, w := range wecs {
			if w.Status != nil {
				reported++
			}
		}
		if reported < 2 {
			continue // a copy of one WEC's status: as valid as that status
		}
		got, err := e.Returned(gk, obj, wecs)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		if errs := jobStatusErrors(got); len(errs) > 0 {
			t.Fatalf("case %d (seed %d): invalid aggregate %s: %v\nWECs: %s", c, seed, compactJSON(got), errs, dumpWECs(wecs))
		}
		if want := earliestStartTime(wecs); want != "" && got["startTime"] != want {
			t.Fatalf("case %d (seed %d): startTime %v, want the earliest %s\nWECs: %s", c, seed, got["startTime"], want, dumpWECs(wecs))
		}
	}
	t.Logf("%d cases", cases)
}

// TestJobAggregateCases: the aggregate for hand-written mixes of finished and running WECs.
func TestJobAggregateCases(t *testing.T) {
	e, err := NewEngine(WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "batch", Kind: "Job"}
	obj := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j", "generation": int64(1)}}
	const t0, t1, t2, t3, t4 = "2025-11-01T10:00:00Z", "2025-11-01T10:01:00Z", "2025-11-01T10:02:00Z", "2025-11-01T10:03:00Z", "2025-11-01T10:04:00Z"
	completed := func(start, done string) map[string]any {
		return map[string]any{"startTime": start, "completionTime": done, "succeeded": int64(1), "conditions": []any{
			jobCond("SuccessCriteriaMet", "True", "CompletionsReached", done), jobCond("Complete", "True", "CompletionsReached", done)}}
	}
	failedSt := func(start, at string) map[string]any {
		return map[string]any{"startTime": start, "failed": int64(2), "conditions": []any{
			jobCond("FailureTarget", "True", "BackoffLimitExceeded", at), jobCond("Failed", "True", "BackoffLimitExceeded", at)}}
	}
	tests := []struct {
		name string
		wecs []map[string]any
		want map[string]any
	}{{
		name: "completed in two WECs, failed in one",
		wecs: []map[string]any{completed(t1, t3), completed(t0, t4), failedSt(t2, t3)},
		want: map[string]any{"startTime": t0, "succeeded": int64(0), "failed": int64(2), "conditions": []any{
			jobCond("FailureTarget", "True", "BackoffLimitExceeded", t3), jobCond("Failed", "True", "BackoffLimitExceeded", t3)}},
	}, {
		name: "failed in one WEC, still running in another",
		wecs: []map[string]any{failedSt(t1, t3), {"startTime": t0, "active": int64(3), "ready": int64(2), "terminating": int64(1)}},
		want: map[string]any{"startTime": t0, "active": int64(0), "ready": int64(0), "terminating": int64(0), "failed": int64(2), "conditions": []any{
			jobCond("FailureTarget", "True", "BackoffLimitExceeded", t3), jobCond("Failed", "True", "BackoffLimitExceeded", t3)}},
	}, {
		name: "completed everywhere: latest completionTime, earliest startTime",
		wecs: []map[string]any{completed(t1, t2), completed(t0, t3)},
		want: map[string]any{"startTime": t0, "completionTime": t3, "succeeded": int64(1), "conditions": []any{
			jobCond("SuccessCriteriaMet", "True", "CompletionsReached", t3), jobCond("Complete", "True", "CompletionsReached", t3)}},
	}, {
		name: "an older WEC fails without FailureTarget; another never started",
		wecs: []map[string]any{{"failed": int64(1), "conditions": []any{jobCond("Failed", "True", "DeadlineExceeded", t2)}}, {}},
		want: map[string]any{"startTime": t2, "failed": int64(1), "conditions": []any{
			jobCond("Failed", "True", "DeadlineExceeded", t2),
			// added from the Failed entry
			map[string]any{"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded", "message": "Failed DeadlineExceeded", "lastTransitionTime": t2}}},
	}, {
		name: "an older WEC completes without SuccessCriteriaMet",
		wecs: []map[string]any{
			{"startTime": t0, "completionTime": t1, "succeeded": int64(1), "conditions": []any{jobCond("Complete", "True", "CompletionsReached", t1)}},
			{"startTime": t0, "completionTime": t2, "succeeded": int64(1), "conditions": []any{jobCond("Complete", "True", "CompletionsReached", t2)}}},
		want: map[string]any{"startTime": t0, "completionTime": t2, "succeeded": int64(1), "conditions": []any{
			jobCond("Complete", "True", "CompletionsReached", t2),
			// added from the Complete entry
			map[string]any{"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Complete CompletionsReached", "lastTransitionTime": t2}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wecs []WEC
			for i, st := range tc.wecs {
				wecs = append(wecs, WEC{Name: fmt.Sprintf("c%d", i), Status: st})
			}
			got, err := e.Returned(gk, obj, wecs)
			if err != nil {
				t.Fatal(err)
			}
			if errs := jobStatusErrors(got); len(errs) > 0 {
				t.Errorf("invalid aggregate: %v", errs)
			}
			if !SameJSON(got, tc.want) {
				t.Errorf("aggregate\n got %s\nwant %s", compactJSON(got), compactJSON(tc.want))
			}
		})
	}
}

package aggregation

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
)

// The property test: for every kind with a built-in module, over many generated multi-WEC cases
// (rollouts in progress, surges, failures, missing conditions, unreported WECs, lagging
// generations), Argo CD's health of the aggregate equals the worst of Argo CD's health of each WEC,
// and the one-WEC copy has the health of that WEC. The kinds' generators are in
// property_generators_test.go.
//
// STATUSFOLD_PROPERTY_CASES sets the number of cases per kind (default 1000);
// STATUSFOLD_PROPERTY_SEED the random seed (default 1).

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// genCase is one generated case: the WDS object and the WECs.
type genCase struct {
	obj  map[string]any
	wecs []WEC
}

// healthyWEC is the oracle's "this WEC is Healthy" for the generators' calm cases.
func healthyWEC(t *testing.T, gk schema.GroupKind, obj map[string]any, gen int64) func(WEC) bool {
	return func(w WEC) bool { return healthOf(t, gk, wecObject(obj, w, gen)) == health.Healthy }
}

// current restates the observedGeneration rule (docs/rules.md "Status return") for the oracle.
func current(w WEC, gen int64) bool {
	d := w.Details
	if w.Status == nil || d == nil || d.LastGeneration < gen || !d.LastGenerationIsApplied {
		return false
	}
	if d.WECGeneration == nil {
		return true
	}
	obs, ok := w.Status["observedGeneration"].(int64)
	return ok && obs >= *d.WECGeneration
}

// wecObject is the WEC's object as Argo CD would judge it against the WDS object: the WDS spec and
// generation, the WEC's status, its observedGeneration expressed in WDS generations.
func wecObject(obj map[string]any, w WEC, gen int64) map[string]any {
	o := runtime.DeepCopyJSON(obj)
	if w.Status != nil {
		st := runtime.DeepCopyJSON(w.Status)
		if _, has := st["observedGeneration"]; has {
			if current(w, gen) {
				st["observedGeneration"] = gen
			} else {
				st["observedGeneration"] = gen - 1
			}
		}
		o["status"] = st
	}
	return o
}

func healthOf(t *testing.T, gk schema.GroupKind, obj map[string]any) health.Status {
	t.Helper()
	r, ok, err := health.Of(gk, obj)
	if !ok || err != nil {
		t.Fatalf("health.Of(%s): ok=%v err=%v", gk, ok, err)
	}
	return r.Status
}

// gatedOnGeneration are the kinds whose Argo CD check returns Progressing for a stale
// observedGeneration before it looks for Degraded: a lagging WEC hides another WEC's Degraded
// until it catches up (the observedGeneration rule of docs/rules.md "Status return"; docs/aggregation.md).
var gatedOnGeneration = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true,
	{Group: "apps", Kind: "ReplicaSet"}: true,
}

func TestPropertyWorstHealth(t *testing.T) {
	e, err := NewEngine(WithTimeout(time.Minute)) // semantics, not bounds: no spurious time-outs on a loaded machine
	if err != nil {
		t.Fatal(err)
	}
	cases := envInt("STATUSFOLD_PROPERTY_CASES", 1000)
	seed := uint64(envInt("STATUSFOLD_PROPERTY_SEED", 1))
	for _, b := range Builtins {
		gk := b.GroupKind
		g, ok := generators[gk]
		if !ok {
			t.Fatalf("no generator for %s", gk)
		}
		t.Run(gk.Kind, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(len(gk.Kind))))
			hist := map[health.Status]int{}
			for c := range cases {
				gen := 1 + r.Int64N(5)
				spec := g.spec(r)
				obj := map[string]any{
					"apiVersion": gvFor(gk), "kind": gk.Kind,
					"metadata": map[string]any{"name": "w", "namespace": "ns", "generation": gen},
					"spec":     spec,
				}
				wecs := genWECs(r, g, obj, gen, 2+r.IntN(4), healthyWEC(t, gk, obj, gen))

				// One WEC: the copy has that WEC's health.
				for _, w := range wecs {
					got, err := e.Returned(gk, obj, []WEC{w})
					if err != nil {
						t.Fatalf("case %d: copy: %v", c, err)
					}
					want := healthOf(t, gk, wecObject(obj, w, gen))
					if h := healthOf(t, gk, withStatus(obj, got)); h != want {
						t.Fatalf("case %d (seed %d): copy of WEC %s has health %s, the WEC %s\nobject: %v\nWEC: %+v %+v\ncopy: %v", c, seed, w.Name, h, want, obj, w.Status, w.Details, got)
					}
				}

				// Several WECs: the aggregate has the worst health.
				var hs []health.Status
				anyLag := false
				for _, w := range wecs {
					hs = append(hs, healthOf(t, gk, wecObject(obj, w, gen)))
					anyLag = anyLag || !current(w, gen)
				}
				want := health.Worst(hs...)
				got, err := e.Returned(gk, obj, wecs)
				if err != nil {
					t.Fatalf("case %d: aggregate: %v", c, err)
				}
				if gatedOnGeneration[gk] && anyLag && want == health.Degraded && got != nil && got["observedGeneration"] != nil {
					want = health.Progressing
				}
				hist[want]++
				if h := healthOf(t, gk, withStatus(obj, got)); h != want {
					t.Fatalf("case %d (seed %d): aggregate health %s, want worst %s of %v\nobject: %v\nWECs: %s\naggregate: %v", c, seed, h, want, hs, obj, dumpWECs(wecs), got)
				}
			}
			t.Logf("%d cases; expected health histogram %v", cases, hist)
		})
	}
}

func withStatus(obj, status map[string]any) map[string]any {
	o := runtime.DeepCopyJSON(obj)
	if status != nil {
		o["status"] = runtime.DeepCopyJSONValue(NormalizeNumbers(status))
	}
	return o
}

func dumpWECs(wecs []WEC) string {
	s := ""
	for _, w := range wecs {
		s += fmt.Sprintf("\n  %s status=%v details=", w.Name, w.Status)
		if w.Details != nil {
			s += fmt.Sprintf("{last:%d applied:%v", w.Details.LastGeneration, w.Details.LastGenerationIsApplied)
			if w.Details.WECGeneration != nil {
				s += fmt.Sprintf(" wecGen:%d", *w.Details.WECGeneration)
			}
			s += "}"
		} else {
			s += "nil"
		}
	}
	return s
}

// TestPropertyIncremental feeds a State random sequences of WEC changes and removals and checks,
// after each, that Result equals Returned over the same WECs from scratch.
func TestPropertyIncremental(t *testing.T) {
	e, err := NewEngine(WithTimeout(time.Minute)) // semantics, not bounds: no spurious time-outs on a loaded machine
	if err != nil {
		t.Fatal(err)
	}
	seqs := envInt("STATUSFOLD_PROPERTY_CASES", 1000) / 10
	kinds := []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "DaemonSet"}, {Group: "apps", Kind: "StatefulSet"}, {Kind: "Pod"}, {Group: "batch", Kind: "Job"}}
	for _, gk := range kinds {
		g := generators[gk]
		t.Run(gk.Kind, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(gk.Kind))))
			for c := range seqs {
				gen := 1 + r.Int64N(5)
				obj := map[string]any{"metadata": map[string]any{"generation": gen}, "spec": g.spec(r)}
				pool := genWECs(r, g, obj, gen, 6, healthyWEC(t, gk, obj, gen))
				s := e.NewState(gk)
				s.SetObject(obj)
				have := map[string]WEC{}
				for step := range 12 {
					w := pool[r.IntN(len(pool))]
					if r.IntN(4) == 0 {
						s.RemoveWEC(w.Name)
						delete(have, w.Name)
					} else {
						if r.IntN(2) == 0 { // a new report from that WEC
							w.Status = g.status(r, obj["spec"].(map[string]any), 1+r.Int64N(4))
						}
						s.UpsertWEC(w)
						have[w.Name] = w
					}
					resultMatchesScratch(t, e, s, gk, obj, have, fmt.Sprintf("sequence %d step %d", c, step))
				}
			}
		})
	}
}

// resultMatchesScratch fails the test unless the State's Result equals Returned computed from
// scratch over the same WECs, and returns the State's result.
func resultMatchesScratch(t *testing.T, e *Engine, s *State, gk schema.GroupKind, obj map[string]any, have map[string]WEC, what string) map[string]any {
	t.Helper()
	got, err := s.Result()
	if err != nil {
		t.Fatal(err)
	}
	wecs := make([]WEC, 0, len(have))
	for _, w := range have {
		wecs = append(wecs, w)
	}
	want, err := e.Returned(gk, obj, wecs)
	if err != nil {
		t.Fatal(err)
	}
	if !SameJSON(got, want) {
		t.Fatalf("%s: incremental %s\nfrom scratch %s", what, compactJSON(got), compactJSON(want))
	}
	return got
}

package aggregation

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Benchmarks, all in one file so that ratios come from one run (`make bench`, or
// go test -run '^$' -bench . -count 5 ./policy/aggregation/):
//   - Deployment over 10, 100, 1,000 and 10,000 WECs: cold (Returned: a new State fed every WEC,
//     then Result) and one-WEC change (UpsertWEC of one WEC, then Result);
//   - the generic module over 1,000 WECs with nested maps and lists, cold and one-WEC change;
//   - GoReference: a hand-written Go Deployment aggregator applying the same rules to the same
//     input (what the "within 3×" target compares with);
//   - Naive: OPA with a plain Go map input, no prepared query (compiled per evaluation), iterating
//     over every WEC in Rego.
//
// Besides ns/op (wall clock), each benchmark reports cpu-ns/op: the process's CPU time (user + system,
// all threads, so garbage collection counts) per operation, which a machine shared with other work
// disturbs much less than wall-clock time; compare ratios of either.

var benchSizes = []int{10, 100, 1000, 10000}

var benchObj = map[string]any{
	"apiVersion": "apps/v1", "kind": "Deployment",
	"metadata": map[string]any{"name": "web", "namespace": "demo", "generation": int64(4)},
	"spec":     map[string]any{"replicas": int64(3)},
}

func benchDeploymentStatus(i int, variant int) map[string]any {
	upd := int64(3)
	if (i+variant)%7 == 0 {
		upd = 2
	}
	return map[string]any{
		"observedGeneration": int64(4), "replicas": int64(3), "updatedReplicas": upd,
		"readyReplicas": int64(3), "availableReplicas": upd, "unavailableReplicas": 3 - upd,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.",
				"lastTransitionTime": fmt.Sprintf("2025-11-%02dT10:00:00Z", 1+(i+variant)%28), "lastUpdateTime": "2025-11-01T10:00:00Z"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet has successfully progressed.",
				"lastTransitionTime": fmt.Sprintf("2025-11-%02dT11:00:00Z", 1+(i+variant)%28), "lastUpdateTime": "2025-11-01T11:00:00Z"},
		},
	}
}

func benchWECs(n int, status func(i, variant int) map[string]any) []WEC {
	d := &controlv1alpha1.StatusDetails{LastGeneration: 4, LastGenerationIsApplied: true}
	wecs := make([]WEC, n)
	for i := range wecs {
		wecs[i] = WEC{Name: fmt.Sprintf("wec-%05d", i), Status: status(i, 0), Details: d}
	}
	return wecs
}

// cpuNanos is the process's CPU time so far.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// loop runs op in b.Loop and reports cpu-ns/op.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	c0 := cpuNanos()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N), "cpu-ns/op")
}

func benchCold(b *testing.B, gk schema.GroupKind, obj map[string]any, wecs []WEC) {
	e, err := NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	loop(b, func() {
		if _, err := e.Returned(gk, obj, wecs); err != nil {
			b.Fatal(err)
		}
	})
}

func benchOneChange(b *testing.B, gk schema.GroupKind, obj map[string]any, wecs []WEC, status func(i, variant int) map[string]any) {
	e, err := NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	s := e.NewState(gk)
	s.SetObject(obj)
	for _, w := range wecs {
		s.UpsertWEC(w)
	}
	if _, err := s.Result(); err != nil {
		b.Fatal(err)
	}
	mid := len(wecs) / 2
	alt := [2]WEC{wecs[mid], wecs[mid]}
	alt[1].Status = status(mid, 1)
	i := 0
	loop(b, func() {
		i++
		s.UpsertWEC(alt[i%2])
		if _, err := s.Result(); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkDeploymentCold(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) { benchCold(b, gkDeployment, benchObj, benchWECs(n, benchDeploymentStatus)) })
	}
}

func BenchmarkDeploymentOneWECChange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			benchOneChange(b, gkDeployment, benchObj, benchWECs(n, benchDeploymentStatus), benchDeploymentStatus)
		})
	}
}

func BenchmarkGoReference(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			wecs := benchWECs(n, benchDeploymentStatus)
			want, err := mustEngine(b).Returned(gkDeployment, benchObj, wecs)
			if err != nil {
				b.Fatal(err)
			}
			if got := goReferenceDeployment(benchObj, wecs); !SameJSON(got, want) {
				b.Fatalf("the Go reference disagrees with the engine:\n%s\n%s", compactJSON(got), compactJSON(want))
			}
			loop(b, func() { goReferenceDeployment(benchObj, wecs) })
		})
	}
}

func BenchmarkNaive(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("wecs=%d", n), func(b *testing.B) {
			wecs := benchWECs(n, benchDeploymentStatus)
			input := map[string]any{"object": benchObj, "wecs": naiveInput(wecs)}
			want, err := mustEngine(b).Returned(gkDeployment, benchObj, wecs)
			if err != nil {
				b.Fatal(err)
			}
			if got := naiveEval(b, input); !SameJSON(got, want) {
				b.Fatalf("the naive module disagrees with the engine:\n%s\n%s", compactJSON(got), compactJSON(want))
			}
			loop(b, func() { naiveEval(b, input) })
		})
	}
}

func benchGenericStatus(i, variant int) map[string]any {
	return map[string]any{
		"observedGeneration": int64(4),
		"phase":              "Ready",
		"ready":              (i+variant)%11 != 0,
		"endpoints":          int64(3 + (i+variant)%5),
		"shards": []any{
			map[string]any{"name": "s0", "replicas": int64(2), "healthy": true, "labels": map[string]any{"tier": "a"}},
			map[string]any{"name": "s1", "replicas": int64(1 + (i+variant)%3), "healthy": (i+variant)%5 != 0, "labels": map[string]any{"tier": "b"}},
		},
		"capacity": map[string]any{"cpu": int64(8 + i%4), "memory": map[string]any{"total": int64(64), "used": int64(10 + (i+variant)%30)}},
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Up", "lastTransitionTime": fmt.Sprintf("2025-11-%02dT10:00:00Z", 1+(i+variant)%28)},
			map[string]any{"type": "Degraded", "status": "False", "reason": "Fine", "lastTransitionTime": "2025-11-01T10:00:00Z"},
		},
	}
}

var gkBenchWidget = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func BenchmarkGenericCold(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(4)}}
	b.Run("wecs=1000", func(b *testing.B) { benchCold(b, gkBenchWidget, obj, benchWECs(1000, benchGenericStatus)) })
}

func BenchmarkGenericOneWECChange(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(4)}}
	b.Run("wecs=1000", func(b *testing.B) {
		benchOneChange(b, gkBenchWidget, obj, benchWECs(1000, benchGenericStatus), benchGenericStatus)
	})
}

func mustEngine(b *testing.B) *Engine {
	e, err := NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// goReferenceDeployment is a hand-written Go Deployment aggregator applying the same rules as
// modules/deployment.rego: counts min/max (missing = 0), conditions by type (positive, ReplicaFailure
// negative) with the newest agreeing entry, observedGeneration mapped to the WDS generation.
func goReferenceDeployment(obj map[string]any, wecs []WEC) map[string]any {
	gen := objectGeneration(obj)
	out := map[string]any{}
	type agg struct {
		isMax bool
		v     int64
		seen  bool
	}
	counts := []struct {
		name string
		agg
	}{{"replicas", agg{isMax: true}}, {"updatedReplicas", agg{}}, {"readyReplicas", agg{}}, {"availableReplicas", agg{}},
		{"unavailableReplicas", agg{isMax: true}}, {"terminatingReplicas", agg{isMax: true}}}
	type condAgg struct {
		typ                     string
		nTrue, nFalse, nOther   int
		present                 int
		latest                  string
		bestTrue, bestFalse, bo map[string]any
		ltTrue, ltFalse, ltO    string
	}
	var conds []*condAgg
	allCurrent, obsSeen := true, false
	for j, w := range wecs {
		st := w.Status
		for k := range counts {
			c := &counts[k]
			x, ok := st[c.name].(int64)
			if ok {
				c.seen = true
			}
			if j == 0 || (c.isMax && x > c.v) || (!c.isMax && x < c.v) {
				c.v = x
			}
		}
		if _, ok := st["observedGeneration"].(int64); ok {
			obsSeen = true
		}
		if !isCurrent(w.Details, st, gen) {
			allCurrent = false
		}
		list, _ := st["conditions"].([]any)
		for _, x := range list {
			m := x.(map[string]any)
			typ, _ := m["type"].(string)
			var ca *condAgg
			for _, c := range conds {
				if c.typ == typ {
					ca = c
				}
			}
			if ca == nil {
				ca = &condAgg{typ: typ}
				conds = append(conds, ca)
			}
			ca.present++
			s, _ := m["status"].(string)
			lt, _ := m["lastTransitionTime"].(string)
			ca.latest = max(ca.latest, lt)
			switch s {
			case "True":
				ca.nTrue++
				if ca.bestTrue == nil || lt > ca.ltTrue {
					ca.bestTrue, ca.ltTrue = m, lt
				}
			case "False":
				ca.nFalse++
				if ca.bestFalse == nil || lt > ca.ltFalse {
					ca.bestFalse, ca.ltFalse = m, lt
				}
			default:
				ca.nOther++
				if ca.bo == nil || lt > ca.ltO {
					ca.bo, ca.ltO = m, lt
				}
			}
		}
	}
	for _, c := range counts {
		if c.seen {
			out[c.name] = c.v
		}
	}
	if obsSeen {
		out["observedGeneration"] = returnedGeneration(gen, allCurrent)
	}
	if len(conds) > 0 {
		list := make([]any, 0, len(conds))
		for _, c := range conds {
			missing := len(wecs) - c.present
			var status string
			var chosen map[string]any
			if c.typ == "ReplicaFailure" {
				switch {
				case c.nTrue > 0:
					status, chosen = "True", c.bestTrue
				case c.nOther == 0:
					status, chosen = "False", c.bestFalse
				default:
					status, chosen = "Unknown", c.bo
				}
			} else {
				switch {
				case c.nFalse > 0:
					status, chosen = "False", c.bestFalse
				case c.nOther == 0 && missing == 0:
					status, chosen = "True", c.bestTrue
				default:
					status, chosen = "Unknown", c.bo
				}
			}
			e := map[string]any{}
			if chosen != nil {
				for k, v := range chosen {
					e[k] = v
				}
			} else {
				e["type"], e["reason"], e["message"] = c.typ, "Incomplete", "not every WEC reports this condition"
			}
			e["status"], e["lastTransitionTime"] = status, c.latest
			list = append(list, e)
		}
		out["conditions"] = list
	}
	return out
}

// naiveModule is the straightforward Rego Deployment aggregator: every rule iterates over every WEC.
const naiveModule = `package naive.deployment

wds_generation := object.get(input.object, ["metadata", "generation"], 0)

count_of(w, f) := n if { n := w.status[f]; is_number(n) } else := 0

reported(f) if { some w in input.wecs; is_number(w.status[f]) }

mins := {f: min([count_of(w, f) | some w in input.wecs]) | some f in ["updatedReplicas", "readyReplicas", "availableReplicas"]; reported(f)}

maxs := {f: max([count_of(w, f) | some w in input.wecs]) | some f in ["replicas", "unavailableReplicas", "terminatingReplicas"]; reported(f)}

current(w) if {
	is_object(w.status)
	w.statusDetails.lastGeneration >= wds_generation
	w.statusDetails.lastGenerationIsApplied
	not status_behind(w)
}

status_behind(w) if {
	g := w.statusDetails.wecGeneration
	not w.status.observedGeneration >= g
}

all_current if {
	every w in input.wecs {
		current(w)
	}
}

observed := wds_generation if all_current else := wds_generation - 1

generation := {"observedGeneration": observed} if {
	some w in input.wecs
	is_number(w.status.observedGeneration)
} else := {}

entries(t) := [c | some w in input.wecs; some c in object.get(w.status, "conditions", []); c.type == t]

combined(t, es) := "True" if { t == "ReplicaFailure"; some c in es; c.status == "True" }
	else := "False" if { t == "ReplicaFailure"; every c in es { c.status == "False" } }
	else := "False" if { t != "ReplicaFailure"; some c in es; c.status == "False" }
	else := "True" if { t != "ReplicaFailure"; count(es) == count(input.wecs); every c in es { c.status == "True" } }
	else := "Unknown"

condition(t) := object.union(chosen, {"status": s, "lastTransitionTime": max({c.lastTransitionTime | some c in es})}) if {
	es := entries(t)
	s := combined(t, es)
	agree := [c | some c in es; c.status == s]
	newest := max({c.lastTransitionTime | some c in agree})
	chosen := [c | some c in agree; c.lastTransitionTime == newest][0]
} else := {"type": t, "status": combined(t, entries(t)), "reason": "Incomplete", "message": "not every WEC reports this condition", "lastTransitionTime": max({c.lastTransitionTime | some c in entries(t)})}

type_set := {c.type | some w in input.wecs; some c in object.get(w.status, "conditions", [])}

first_seen(t) := min({[i, k] | some i, w in input.wecs; some k, c in object.get(w.status, "conditions", []); c.type == t})

types := [p[1] | some p in sort([[first_seen(t), t] | some t in type_set])]

conditions := {"conditions": [condition(t) | some t in types]} if count(types) > 0 else := {}

status := object.union_n([mins, maxs, generation, conditions])
`

func naiveInput(wecs []WEC) []any {
	out := make([]any, len(wecs))
	for i, w := range wecs {
		out[i] = wecDoc(w)
	}
	return out
}

func naiveEval(b *testing.B, input map[string]any) map[string]any {
	rs, err := rego.New(rego.Query("data.naive.deployment.status"), rego.Module("naive.rego", naiveModule), rego.Input(input)).Eval(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if len(rs) == 0 {
		b.Fatal("naive module: undefined")
	}
	m, _ := NormalizeNumbers(rs[0].Expressions[0].Value).(map[string]any)
	return m
}

// Large lists: the union of loadBalancer.ingress (test/hostile's builtin-ingress-huge-ingress-list
// is 50 WECs × 100 entries), the generic module merging long lists element by element, and
// conditions with many types. Each should grow about linearly with the total input size.

func benchIngressStatus(entries int) func(i, variant int) map[string]any {
	return func(i, variant int) map[string]any {
		list := make([]any, entries)
		for j := range list {
			list[j] = map[string]any{"ip": fmt.Sprintf("10.%d.%d.%d", i%250, j%250, variant)}
		}
		return map[string]any{"loadBalancer": map[string]any{"ingress": list}}
	}
}

func BenchmarkIngressUnion(b *testing.B) {
	gk := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	obj := map[string]any{"metadata": map[string]any{"generation": int64(1)}}
	for _, size := range [][2]int{{50, 100}, {200, 100}} {
		b.Run(fmt.Sprintf("wecs=%d/entries=%d", size[0], size[1]), func(b *testing.B) {
			benchCold(b, gk, obj, benchWECs(size[0], benchIngressStatus(size[1])))
		})
	}
}

func benchLongListStatus(n int) func(i, variant int) map[string]any {
	return func(i, variant int) map[string]any {
		list := make([]any, n)
		for j := range list {
			list[j] = map[string]any{"name": fmt.Sprintf("item-%d", j), "count": int64(j + (i+variant)%3), "ok": true}
		}
		return map[string]any{"items": list}
	}
}

func BenchmarkGenericLongList(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(1)}}
	for _, size := range [][2]int{{50, 100}, {50, 1000}} {
		b.Run(fmt.Sprintf("wecs=%d/entries=%d", size[0], size[1]), func(b *testing.B) {
			benchCold(b, gkBenchWidget, obj, benchWECs(size[0], benchLongListStatus(size[1])))
		})
	}
}

func benchManyConditionsStatus(types int) func(i, variant int) map[string]any {
	return func(i, variant int) map[string]any {
		list := make([]any, types)
		for j := range list {
			list[j] = map[string]any{"type": fmt.Sprintf("Check%d", j), "status": "True", "reason": "OK", "lastTransitionTime": fmt.Sprintf("2025-11-%02dT10:00:00Z", 1+(i+j+variant)%28)}
		}
		return map[string]any{"conditions": list}
	}
}

func BenchmarkConditionsManyTypes(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(1)}}
	for _, size := range [][2]int{{50, 100}, {50, 1000}} {
		b.Run(fmt.Sprintf("wecs=%d/types=%d", size[0], size[1]), func(b *testing.B) {
			benchCold(b, gkBenchWidget, obj, benchWECs(size[0], benchManyConditionsStatus(size[1])))
		})
	}
}

// BenchmarkGenericOneFieldChange: one WEC changes one field (endpoints) of benchGenericStatus; the
// generic module reuses the combined values of the other fields.
func BenchmarkGenericOneFieldChange(b *testing.B) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(4)}}
	status := func(i, variant int) map[string]any {
		st := benchGenericStatus(i, 0)
		st["endpoints"] = int64(3 + (i+variant)%5)
		return st
	}
	b.Run("wecs=1000", func(b *testing.B) { benchOneChange(b, gkBenchWidget, obj, benchWECs(1000, status), status) })
}

package aggregation

import (
	"fmt"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Benchmarks, all in this file so that ratios come from one run (`make bench`, or
// go test -run '^$' -bench . -count 5 ./policy/aggregation/); the baselines GoReference and Naive
// run are in bench_reference_test.go:
//   - Deployment over 10, 100, 1,000 and 10,000 WECs: cold (Returned: a new State fed every WEC,
//     then Result) and one-WEC change (UpsertWEC of one WEC, then Result);
//   - the generic module over 1,000 WECs with nested maps and lists, cold and one-WEC change;
//   - GoReference: a hand-written Go Deployment aggregator applying the same rules to the same
//     input (the baseline of the cold / Go reference ratio in docs/aggregation.md "Performance");
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

func benchCold(b *testing.B, gk schema.GroupKind, obj map[string]any, wecs []WEC, opts ...Option) {
	e, err := NewEngine(opts...)
	if err != nil {
		b.Fatal(err)
	}
	loop(b, func() {
		if _, err := e.Returned(gk, obj, wecs); err != nil {
			b.Fatal(err)
		}
	})
}

func benchOneChange(b *testing.B, gk schema.GroupKind, obj map[string]any, wecs []WEC, status func(i, variant int) map[string]any, opts ...Option) {
	e, err := NewEngine(opts...)
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

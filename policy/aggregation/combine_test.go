package aggregation

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestUnionIfAll: entries JSON-equal across WECs appear once, in first-seen order, whatever Go
// types the numbers decoded to; the list is left out when some WEC has none.
func TestUnionIfAll(t *testing.T) {
	e, err := NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	entry := func(ip string, port any) map[string]any {
		return map[string]any{"ip": ip, "ports": []any{map[string]any{"port": port, "protocol": "TCP"}}}
	}
	lb := func(entries ...any) map[string]any {
		return map[string]any{"loadBalancer": map[string]any{"ingress": entries}}
	}
	tests := []struct {
		name string
		wecs []map[string]any
		want map[string]any
	}{{
		name: "JSON-equal entries once, first-seen order",
		wecs: []map[string]any{
			lb(entry("10.0.0.2", int64(80)), entry("10.0.0.1", int64(80))),
			lb(entry("10.0.0.1", float64(80)), entry("10.0.0.3", int64(443)), entry("10.0.0.2", int64(80))),
		},
		want: lb(entry("10.0.0.2", int64(80)), entry("10.0.0.1", int64(80)), entry("10.0.0.3", int64(443))),
	}, {
		name: "different ports are different entries",
		wecs: []map[string]any{lb(entry("10.0.0.1", int64(80))), lb(entry("10.0.0.1", int64(81)))},
		want: lb(entry("10.0.0.1", int64(80)), entry("10.0.0.1", int64(81))),
	}, {
		name: "a hostname entry and an ip entry with the same text differ",
		wecs: []map[string]any{lb(map[string]any{"ip": "a"}), lb(map[string]any{"hostname": "a"})},
		want: lb(map[string]any{"ip": "a"}, map[string]any{"hostname": "a"}),
	}, {
		name: "one WEC without entries: left out",
		wecs: []map[string]any{lb(entry("10.0.0.1", int64(80))), lb()},
		want: map[string]any{"loadBalancer": map[string]any{}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wecs []WEC
			for i, st := range tc.wecs {
				wecs = append(wecs, WEC{Name: fmt.Sprintf("c%d", i), Status: st})
			}
			got, err := e.Returned(gk, map[string]any{}, wecs)
			if err != nil {
				t.Fatal(err)
			}
			if !SameJSON(got, tc.want) {
				t.Errorf("got  %s\nwant %s", compactJSON(got), compactJSON(tc.want))
			}
		})
	}
}

// TestConditionsManyTypes: with more types than the linear search handles, types keep their order
// of first appearance and each combines on its own.
func TestConditionsManyTypes(t *testing.T) {
	const types = 20
	var a, b, want []any
	for i := range types {
		typ := fmt.Sprintf("Check%02d", types-1-i) // not in name order
		sa, sb, sw := "True", "True", "True"
		if i%3 == 1 {
			sb, sw = "False", "False"
		}
		a = append(a, map[string]any{"type": typ, "status": sa, "reason": "A", "lastTransitionTime": "2025-11-01T10:00:00Z"})
		if i%5 == 4 { // missing in b: Unknown
			want = append(want, map[string]any{"type": typ, "status": "Unknown", "reason": "Incomplete", "message": "not every WEC reports this condition", "lastTransitionTime": "2025-11-01T10:00:00Z"})
			continue
		}
		b = append(b, map[string]any{"type": typ, "status": sb, "reason": "B", "lastTransitionTime": "2025-11-02T10:00:00Z"})
		reason := "B" // the newest agreeing entry
		want = append(want, map[string]any{"type": typ, "status": sw, "reason": reason, "lastTransitionTime": "2025-11-02T10:00:00Z"})
	}
	e, err := NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Returned(gkBenchWidget, map[string]any{}, []WEC{{Name: "a", Status: map[string]any{"conditions": a}}, {Name: "b", Status: map[string]any{"conditions": b}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := map[string]any{"conditions": want}; !SameJSON(got, w) {
		t.Errorf("got  %s\nwant %s", compactJSON(got), compactJSON(w))
	}
}

// genericStatus is a random status for a kind without a module: fields present or not, nested
// maps, lists of varying length, conditions, values of different types.
func genericStatus(r *rand.Rand) map[string]any {
	st := map[string]any{}
	maybe := func(k string, v func() any) {
		if r.IntN(3) > 0 {
			st[k] = v()
		}
	}
	maybe("phase", func() any { return pick(r, "Ready", "Ready", "Pending") })
	maybe("ready", func() any { return r.IntN(4) > 0 })
	maybe("endpoints", func() any { return int64(r.IntN(4)) })
	maybe("mixed", func() any { return pick[any](r, "x", int64(1), true) })
	maybe("capacity", func() any {
		return map[string]any{"cpu": int64(4 + r.IntN(2)), "memory": map[string]any{"used": int64(r.IntN(3))}}
	})
	maybe("shards", func() any {
		l := make([]any, 1+r.IntN(2))
		for i := range l {
			l[i] = map[string]any{"name": fmt.Sprintf("s%d", i), "replicas": int64(r.IntN(3))}
		}
		return l
	})
	maybe("conditions", func() any {
		return []any{
			map[string]any{"type": "Ready", "status": pick(r, "True", "True", "False"), "reason": pick(r, "Up", "Down"), "lastTransitionTime": ts(r)},
			map[string]any{"type": "Degraded", "status": pick(r, "False", "True"), "reason": "R", "lastTransitionTime": ts(r)},
		}
	})
	maybe("observedGeneration", func() any { return int64(1 + r.IntN(3)) })
	return st
}

// TestPropertyIncrementalGeneric: a State of the generic module (which reuses the combined value of
// every field no WEC changed) fed random changes, repeated changes and removals always equals
// Returned from scratch, and no two results share a map or list.
func TestPropertyIncrementalGeneric(t *testing.T) {
	e, err := NewEngine(WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	seqs := envInt("STATUSFOLD_PROPERTY_CASES", 1000) / 5
	r := rand.New(rand.NewPCG(11, 3))
	for c := range seqs {
		obj := map[string]any{"metadata": map[string]any{"generation": int64(2)}}
		s := e.NewState(gkBenchWidget)
		s.SetObject(obj)
		have := map[string]WEC{}
		var prev map[string]any
		for step := range 16 {
			name := fmt.Sprintf("w%d", r.IntN(5))
			switch {
			case r.IntN(6) == 0:
				s.RemoveWEC(name)
				delete(have, name)
			default:
				w := WEC{Name: name, Status: genericStatus(r), Details: &controlv1alpha1.StatusDetails{LastGeneration: 2, LastGenerationIsApplied: true}}
				if r.IntN(8) == 0 {
					w.Status = nil
				}
				s.UpsertWEC(w)
				have[name] = w
			}
			if r.IntN(4) == 0 {
				continue // several changes before the next Result
			}
			got := resultMatchesScratch(t, e, s, gkBenchWidget, obj, have, fmt.Sprintf("sequence %d step %d", c, step))
			if prev != nil {
				for k, v := range got {
					if m, ok := v.(map[string]any); ok {
						if pm, ok := prev[k].(map[string]any); ok && reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(pm).UnsafePointer() {
							t.Fatalf("sequence %d step %d: two results share the map of field %q", c, step, k)
						}
					}
				}
			}
			prev = got
		}
	}
}

package aggregation

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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

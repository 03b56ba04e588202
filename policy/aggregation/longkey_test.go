package aggregation

import (
	"strings"
	"testing"
)

// TestReturnedLongKey: a returned status with an object key longer than an apply body may hold
// (1,022 characters as JSON) is an evaluation error naming the module, the key's path, its length
// and the limit; at 1,022 characters it is returned.
func TestReturnedLongKey(t *testing.T) {
	wecs := []WEC{{Name: "a", Status: map[string]any{"s": strings.Repeat("x", 1021)}},
		{Name: "b", Status: map[string]any{"s": strings.Repeat("x", 1022)}}}
	e := newEngine(t)
	if errs := e.SetPolicy(policy("keyed", "Widget", `package keyed
status := {"byWEC": {concat("", ["k", w.status.s]): 1 | some w in input.wecs; count(w.status.s) < input.object.spec.n}}
`)); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, err := e.Returned(gkWidget, map[string]any{"spec": map[string]any{"n": int64(1022)}}, wecs)
	if err != nil {
		t.Fatalf("1,022 characters: %v", err)
	}
	if m, _ := got["byWEC"].(map[string]any); len(m) != 1 || m["k"+strings.Repeat("x", 1021)] == nil {
		t.Fatalf("1,022 characters: got %v", got)
	}
	_, err = e.Returned(gkWidget, map[string]any{"spec": map[string]any{"n": int64(1023)}}, wecs)
	const want = "AggregationPolicy/keyed: the status holds at .byWEC.kxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… a map key of 1023 characters; " +
		"an apply body takes keys of at most 1022 characters"
	if err == nil || err.Error() != want {
		t.Fatalf("1,023 characters: err = %v, want %q", err, want)
	}
}

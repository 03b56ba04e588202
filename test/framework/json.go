package framework

import (
	"encoding/json"
	"testing"
)

// JSONRoundTrip returns v encoded to JSON and decoded again: a deep copy in canonical decoded form
// (maps of any, float64 numbers), so that values read from YAML, Go structs and the apiserver
// compare equal.
func JSONRoundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

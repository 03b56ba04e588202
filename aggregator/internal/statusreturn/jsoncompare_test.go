package statusreturn

import (
	"testing"
)

func TestContains(t *testing.T) {
	cases := []struct {
		name       string
		have, want any
		ok         bool
	}{
		{"subset of a map", map[string]any{"a": int64(1), "b": "x"}, map[string]any{"a": float64(1)}, true},
		{"different value", map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)}, false},
		{"missing key", map[string]any{}, map[string]any{"a": true}, false},
		{"lists element by element", []any{map[string]any{"t": "R", "x": 1}}, []any{map[string]any{"t": "R"}}, true},
		{"lists of different length", []any{int64(1)}, []any{int64(1), int64(2)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contains(tc.have, tc.want); got != tc.ok {
				t.Errorf("contains = %v, want %v", got, tc.ok)
			}
		})
	}
}

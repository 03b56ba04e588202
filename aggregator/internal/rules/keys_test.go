package rules

import (
	"slices"
	"testing"
)

func TestUnionSorted(t *testing.T) {
	cases := []struct{ x, y, want []string }{
		{nil, nil, nil},
		{[]string{"a"}, nil, []string{"a"}},
		{nil, []string{"b"}, []string{"b"}},
		{[]string{"a", "c", "e"}, []string{"b", "c", "f"}, []string{"a", "b", "c", "e", "f"}},
		{[]string{"a", "b"}, []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tc := range cases {
		if got := UnionSorted(tc.x, tc.y); !slices.Equal(got, tc.want) {
			t.Errorf("unionSorted(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

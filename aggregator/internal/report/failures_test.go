package report

import (
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	th := NewThrottle(time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		key            string
		at             time.Duration
		want           bool
		wantSuppressed int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"b", time.Second, true, 0}, // another key is not held back
		{"a", 30 * time.Second, false, 0},
		{"a", 61 * time.Second, true, 2}, // reported again, with the count of those held back
		{"a", 62 * time.Second, false, 0},
		{"a", 200 * time.Second, true, 1},
	}
	for i, s := range steps {
		got, n := th.Allow(s.key, t0.Add(s.at))
		if got != s.want || n != s.wantSuppressed {
			t.Errorf("step %d (%s at %s): allow = %v, %d; want %v, %d", i, s.key, s.at, got, n, s.want, s.wantSuppressed)
		}
	}
}

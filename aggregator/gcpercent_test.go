package aggregator

import (
	"runtime/debug"
	"testing"
)

func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	t.Setenv("GOGC", "")
	if p, source := SetGCPercent(50); p != 50 || source != "--gc-percent=50" {
		t.Errorf("GOGC unset: got %d from %q, want 50 from the flag", p, source)
	}
	if cur := debug.SetGCPercent(50); cur != 50 {
		t.Errorf("GOGC unset: the runtime's percentage is %d, want 50", cur)
	}

	debug.SetGCPercent(80) // as the runtime does for GOGC=80
	t.Setenv("GOGC", "80")
	if p, source := SetGCPercent(50); p != 80 || source != "GOGC=80 (environment)" {
		t.Errorf("GOGC=80: got %d from %q, want 80 from the environment", p, source)
	}
	if cur := debug.SetGCPercent(80); cur != 80 {
		t.Errorf("GOGC=80: the runtime's percentage is %d, want it left at 80", cur)
	}
}

// TestStartupGCPercent: a lower target until restore is called (once), none when it is not lower
// or GOGC is set.
func TestStartupGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	t.Setenv("GOGC", "")
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }

	debug.SetGCPercent(50)
	restore, set := StartupGCPercent(25)
	if !set || current() != 25 {
		t.Fatalf("startup at 25 under 50: set %v, percentage %d", set, current())
	}
	restore()
	if current() != 50 {
		t.Fatalf("after restore: %d, want 50", current())
	}
	debug.SetGCPercent(70)
	restore() // once only
	if current() != 70 {
		t.Fatalf("a second restore changed the percentage to %d", current())
	}

	for _, tc := range []struct{ cur, p int }{{50, 50}, {50, 80}, {50, 0}, {-1, 25}} {
		debug.SetGCPercent(tc.cur)
		restore, set := StartupGCPercent(tc.p)
		restore()
		if set || current() != tc.cur {
			t.Errorf("startup %d under %d: set %v, percentage %d; want it left alone", tc.p, tc.cur, set, current())
		}
	}

	debug.SetGCPercent(80)
	t.Setenv("GOGC", "80")
	if _, set := StartupGCPercent(25); set || current() != 80 {
		t.Errorf("GOGC=80: startup target set %v, percentage %d; want it left alone", set, current())
	}
}

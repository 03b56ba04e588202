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

package aggregator

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
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

// TestAwaitFirstPass: AfterFirstPass is called once the objects queue is empty after the sync,
// not while an object waits; never when the context ends first.
func TestAwaitFirstPass(t *testing.T) {
	called := make(chan struct{}, 2)
	a := &Aggregator{objects: pacing.NewCoalescingQueue[rules.ObjectKey]("first-pass-test", 0), log: logr.Discard(),
		opts: Options{AfterFirstPass: func() { called <- struct{}{} }}}
	defer a.objects.ShutDown()
	key := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	a.objects.Add(key)
	go a.awaitFirstPass(context.Background(), time.Now())
	select {
	case <-called:
		t.Fatal("AfterFirstPass called while an object was queued")
	case <-time.After(3 * firstPassPoll):
	}
	k, _ := a.objects.Get()
	a.objects.Done(k)
	select {
	case <-called:
	case <-time.After(20 * firstPassPoll):
		t.Fatal("AfterFirstPass not called after the queue emptied")
	}

	ctx, cancel := context.WithCancel(context.Background())
	a.objects.Add(key)
	done := make(chan struct{})
	go func() { a.awaitFirstPass(ctx, time.Now()); close(done) }()
	cancel()
	<-done
	if len(called) != 0 {
		t.Fatal("AfterFirstPass called after the context ended")
	}
}

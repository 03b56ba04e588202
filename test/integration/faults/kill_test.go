package faults

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// TestManagerKill9MidStream kills the manager with SIGKILL during a stream of 1,000 WorkStatus
// updates, restarts it, and requires every CombinedStatus and returned status to equal a fresh
// evaluation of the final WorkStatuses: no update is lost, nothing stale remains.
func TestManagerKill9MidStream(t *testing.T) {
	cp, fx := setup(t, 20, 10, 2)
	ctx := context.Background()
	m := startManager(t, cp)
	rng := rand.New(rand.NewPCG(8, 8))
	const updates, killAt, restartAt = 1000, 400, 700
	for k := range updates {
		switch k {
		case killAt:
			m.kill()
			t.Logf("manager killed after %d updates", k)
		case restartAt:
			m = startManager(t, cp)
			t.Logf("manager restarted after %d updates", k)
		}
		if _, _, err := fx.Write(ctx, rng.IntN(fx.WECs), rng.IntN(fx.Objects), int64(rng.IntN(4))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	requireConverged(t, cp, fx, 60*time.Second)
	if !m.alive() {
		t.Fatalf("the restarted manager exited")
	}
}

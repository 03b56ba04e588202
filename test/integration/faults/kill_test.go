package faults

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestManagerKill9MidStream kills the manager with SIGKILL during a stream of 1,000 WorkStatus
// updates, restarts it, and requires every CombinedStatus and returned status to equal a fresh
// evaluation of the final WorkStatuses: no update is lost, nothing stale remains.
func TestManagerKill9MidStream(t *testing.T) {
	cp, fx := setup(t, 20, 10, 2)
	m := startManager(t, cp)
	rng := rand.New(rand.NewPCG(8, 8))
	const updates, killAt, restartAt = 1000, 400, 700
	anyObject := func() int { return rng.IntN(fx.Objects) }
	writeRandom(t, fx, rng, killAt, anyObject, 4)
	m.kill()
	t.Logf("manager killed after %d updates", killAt)
	writeRandom(t, fx, rng, restartAt-killAt, anyObject, 4)
	m = startManager(t, cp)
	t.Logf("manager restarted after %d updates", restartAt)
	writeRandom(t, fx, rng, updates-restartAt, anyObject, 4)
	requireConverged(t, cp, fx, 60*time.Second)
	if !m.alive() {
		t.Fatalf("the restarted manager exited")
	}
}

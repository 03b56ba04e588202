package faults

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLeaderFailover runs two leader-electing replicas, kills the leader with SIGKILL during a
// stream of updates, and requires the other replica to take over and converge.
func TestLeaderFailover(t *testing.T) {
	cp, fx := setup(t, 10, 6, 2)
	le := []string{"--leader-elect", "--leader-election-namespace=default"}
	replicas := []*manager{startManager(t, cp, le...), startManager(t, cp, le...)}
	leader := waitLeader(t, replicas, 60*time.Second)
	rng := rand.New(rand.NewPCG(3, 4))
	write := func(n int) { writeRandom(t, fx, rng, n, func() int { return rng.IntN(fx.Objects) }, 4) }
	write(200)
	requireConverged(t, cp, fx, 60*time.Second)

	replicas[leader].kill()
	t.Logf("leader (pid %d) killed", replicas[leader].cmd.Process.Pid)
	write(200)
	other := replicas[1-leader]
	// The Lease is only taken over when it expires (15 s by default).
	if got := waitLeader(t, []*manager{other}, 60*time.Second); got != 0 {
		t.Fatalf("the surviving replica did not become leader")
	}
	write(100)
	requireConverged(t, cp, fx, 60*time.Second)
}

// waitLeader waits until exactly one of the managers reports being the leader and returns its
// index.
func waitLeader(t *testing.T, ms []*manager, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leader, n := -1, 0
		for i, m := range ms {
			if m.alive() && m.isLeader() {
				leader, n = i, n+1
			}
		}
		if n > 1 {
			t.Fatalf("%d replicas report being the leader at once", n)
		}
		if n == 1 {
			return leader
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no leader after %s", timeout)
	return -1
}

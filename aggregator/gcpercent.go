package aggregator

import (
	"os"
	"runtime/debug"
	"strconv"
	"sync"
)

// DefaultGCPercent is the Go garbage collector's target percentage (GOGC) the manager runs with
// when the GOGC environment variable is unset. The manager's heap is mostly its caches — live for
// as long as it runs — and the runtime's default of 100 lets the heap grow to twice that live set
// between collections; at 50 it grows to 1.5×, for more collections: each marks the live set, so
// the collector's CPU about doubles (a small part of the manager's CPU; docs/performance.md,
// "Memory"). Prometheus, also a cache-heavy Go server, runs at 75 by default for the same reason.
// A container memory limit bounds the heap besides (--memory-limit).
const DefaultGCPercent = 50

// SetGCPercent sets the garbage collector's target percentage to p (negative: collection off),
// unless the GOGC environment variable is set (the runtime applied it; left alone). It returns
// the percentage in force and where it came from.
func SetGCPercent(p int) (int, string) {
	if env, set := os.LookupEnv("GOGC"); set && env != "" {
		cur := debug.SetGCPercent(100)
		debug.SetGCPercent(cur)
		return cur, "GOGC=" + env + " (environment)"
	}
	debug.SetGCPercent(p)
	return p, "--gc-percent=" + strconv.Itoa(p)
}

// DefaultStartupGCPercent is the garbage collector's target while the caches fill at start, until
// the first pass over the objects is done (Options.AfterFirstPass). The manager's peak memory is
// reached then: its heap grows from nothing to its working size while the initial lists are
// decoded (garbage at a high rate), and at the steady target's headroom the heap is allowed to
// grow 50 % beyond a live set that is about to be mostly the caches. A lower target for those
// seconds keeps the peak near the steady state's size for more collector CPU during the start
// only (docs/design-notes.md, "The garbage collector runs at 50 %").
const DefaultStartupGCPercent = 25

// StartupGCPercent sets the garbage collector's target to p for the start, when p is positive and
// below the target in force and the GOGC environment variable is unset; it returns the function
// that restores the target in force before (once; a no-op when nothing was changed).
func StartupGCPercent(p int) (restore func(), set bool) {
	if env, ok := os.LookupEnv("GOGC"); (ok && env != "") || p <= 0 {
		return func() {}, false
	}
	cur := debug.SetGCPercent(p)
	if cur < 0 || p >= cur {
		debug.SetGCPercent(cur)
		return func() {}, false
	}
	return sync.OnceFunc(func() { debug.SetGCPercent(cur) }), true
}

package aggregator

import (
	"os"
	"runtime/debug"
	"strconv"
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

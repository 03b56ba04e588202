package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The manager's Go memory limit (docs/controller.md, "Memory"). The Go runtime collects garbage
// when the heap doubles, whatever the container's memory limit: with informer caches of 100,000
// objects, the heap can pass the limit between two collections and the container is OOM-killed.
// A soft limit (GOMEMLIMIT, runtime/debug.SetMemoryLimit) below the container's makes the
// runtime collect more often as it gets near, instead.
//
// Precedence: the GOMEMLIMIT environment variable (the runtime has applied it; left alone), then
// --memory-limit, then memoryLimitRatio of the container's cgroup memory limit, else none.
//
// The cgroup limit is read from the two places a container runtime mounts the container's own
// memory cgroup: /sys/fs/cgroup/memory.max (cgroup v2, "max" when unlimited) and
// /sys/fs/cgroup/memory/memory.limit_in_bytes (cgroup v1, a huge number when unlimited). That
// is all a pod needs. github.com/KimMachineGun/automemlimit (≈1,000 lines and a dependency) also
// finds the cgroup of a process outside a cgroup namespace through /proc/self/mountinfo, which a
// manager in a pod does not need; two file reads keep the manager's dependencies as they are.

// memoryLimitRatio is the share of the container's memory limit given to the Go runtime; the
// rest is for what the runtime does not count (stacks' slack, the binary, cgo-free but mmapped
// memory) and for the time a collection takes.
const memoryLimitRatio = 0.9

// cgroupUnlimited: a cgroup v1 limit at or above this is "no limit" (the kernel reports
// 9223372036854771712, its largest page count in bytes).
const cgroupUnlimited = 1 << 62

// memoryLimitChoice is the memory limit chosen and why.
type memoryLimitChoice struct {
	limit  int64  // bytes; 0: none (keep the runtime's)
	set    bool   // the runtime's limit should be set to limit
	source string // for the log
}

// chooseMemoryLimit decides the Go memory limit from the GOMEMLIMIT variable (env, as
// os.LookupEnv returns it), the --memory-limit flag (flag, "" when not given) and the cgroup
// files under root (the file system's root, os.DirFS("/") in the manager).
func chooseMemoryLimit(env string, envSet bool, flag string, root fs.FS) (memoryLimitChoice, error) {
	if envSet && env != "" {
		return memoryLimitChoice{source: "GOMEMLIMIT=" + env + " (environment)"}, nil
	}
	if flag != "" {
		q, err := resource.ParseQuantity(flag)
		if err != nil {
			return memoryLimitChoice{}, fmt.Errorf("--memory-limit %q: %w", flag, err)
		}
		n := q.Value()
		if n < 0 {
			return memoryLimitChoice{}, fmt.Errorf("--memory-limit %q: must not be negative", flag)
		}
		if n == 0 {
			return memoryLimitChoice{source: "none (--memory-limit=0)"}, nil
		}
		return memoryLimitChoice{limit: n, set: true, source: "--memory-limit"}, nil
	}
	n, file, err := cgroupMemoryLimit(root)
	if err != nil {
		return memoryLimitChoice{source: "none: " + err.Error()}, err
	}
	if n == 0 {
		return memoryLimitChoice{source: "none (no cgroup memory limit)"}, nil
	}
	return memoryLimitChoice{limit: int64(float64(n) * memoryLimitRatio), set: true,
		source: fmt.Sprintf("%.0f%% of %s (%d bytes)", memoryLimitRatio*100, file, n)}, nil
}

// cgroupMemoryLimit returns the memory limit of the cgroup mounted under root, in bytes (0: none),
// and the file it was read from. A missing file means no limit; an unreadable or malformed one
// is an error naming the file.
func cgroupMemoryLimit(root fs.FS) (int64, string, error) {
	for _, file := range []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := fs.ReadFile(root, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "/" + file, fmt.Errorf("/%s: %w", file, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, "/" + file, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, "/" + file, fmt.Errorf("/%s: %q is not a byte count or \"max\"", file, s)
		}
		if n >= cgroupUnlimited {
			return 0, "/" + file, nil
		}
		return n, "/" + file, nil
	}
	return 0, "", nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit as chooseMemoryLimit decides and logs
// what was chosen. An invalid --memory-limit is an error; an unreadable cgroup file is logged and
// the manager runs without a limit.
func applyMemoryLimit(flag string) error {
	log := ctrl.Log.WithName("setup")
	env, envSet := os.LookupEnv("GOMEMLIMIT")
	choice, err := chooseMemoryLimit(env, envSet, flag, os.DirFS("/"))
	if err != nil && flag != "" {
		return err
	}
	if err != nil {
		log.Error(err, "cgroup memory limit not read; no Go memory limit set")
		return nil
	}
	if choice.set {
		debug.SetMemoryLimit(choice.limit)
	}
	limit := debug.SetMemoryLimit(-1) // reads the limit in force
	if limit == math.MaxInt64 {
		log.Info("Go memory limit", "limit", "none", "source", choice.source)
		return nil
	}
	log.Info("Go memory limit", "limit", resource.NewQuantity(limit, resource.BinarySI).String(), "bytes", limit, "source", choice.source)
	return nil
}

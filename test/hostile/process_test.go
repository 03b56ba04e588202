package hostile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/statusfold/statusfold/test/framework"
)

// memoryLimit is the manager's Go memory limit in the entry-point suite: what `statusfold
// manager` sets under the chart's default container limit (512Mi, of which 90 %).
const memoryLimit = "460Mi"

// bin is the statusfold binary the entry-point suite runs (built once per test binary).
var bin struct {
	once sync.Once
	path string
	err  error
}

// statusfoldBinary builds cmd/statusfold into a temporary folder, once.
func statusfoldBinary(t *testing.T) string {
	t.Helper()
	bin.once.Do(func() {
		dir, err := os.MkdirTemp("", "statusfold-hostile-")
		if err != nil {
			bin.err = err
			return
		}
		bin.path = filepath.Join(dir, "statusfold")
		build := exec.Command("go", "build", "-o", bin.path, "./cmd/statusfold")
		build.Dir = framework.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			bin.err = fmt.Errorf("building statusfold: %v\n%s", err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}

// managerProcess is `statusfold manager` (controllers and webhooks) as a child process, whose
// resident memory the suite reads from /proc.
type managerProcess struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	mu   sync.Mutex // guards log
	done chan struct{}
}

type lockedWriter struct{ m *managerProcess }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.m.log.Write(p)
}

// startManagerProcess runs the binary's `manager` command with args against the control plane.
func startManagerProcess(t *testing.T, cp *framework.ControlPlane, args ...string) *managerProcess {
	t.Helper()
	cmd := exec.Command(statusfoldBinary(t), append([]string{"manager"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig)
	m := &managerProcess{cmd: cmd, log: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = lockedWriter{m}, lockedWriter{m}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", tail(m.logText(), 4000))
		}
	})
	return m
}

func (m *managerProcess) logText() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log.String()
}

// alive says whether the process still runs.
func (m *managerProcess) alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// memory reads the process's resident set size and its peak since the last resetPeak
// (/proc/PID/status VmRSS and VmHWM), in bytes.
func (m *managerProcess) memory() (rss, peak uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", k, v, err)
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			peak = n << 10
		}
	}
	return rss, peak, nil
}

// resetPeak makes the kernel's peak (VmHWM) the current resident set size.
func (m *managerProcess) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.cmd.Process.Pid), []byte("5"), 0)
}

// measured runs f and returns its duration and the manager's peak resident memory above base
// while it ran.
func (m *managerProcess) measured(t *testing.T, base uint64, f func()) (time.Duration, uint64) {
	t.Helper()
	if err := m.resetPeak(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f()
	d := time.Since(start)
	_, peak, err := m.memory()
	if err != nil {
		t.Fatalf("reading the manager's memory (did it exit?): %v", err)
	}
	return d, growth(peak, base)
}

func growth(peak, base uint64) uint64 {
	if peak < base {
		return 0
	}
	return peak - base
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// cliRun is one run of the statusfold binary: its combined output, whether it exited 0, its
// wall time and its peak resident memory.
type cliRun struct {
	out  string
	ok   bool
	time time.Duration
	peak uint64
}

// runCLI runs the statusfold binary with args and GOMEMLIMIT as the manager has it. The peak
// resident memory is the child's VmHWM, sampled every 2 ms until it exits: the kernel's maximum
// RSS from wait4 is no use, since it counts the parent's memory at the time of the fork.
func runCLI(t *testing.T, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(statusfoldBinary(t), args...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+memoryLimit+"B")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := &managerProcess{cmd: cmd}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak uint64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, p, err := child.memory(); err == nil {
			peak = max(peak, p)
		}
		select {
		case err := <-done:
			r := cliRun{out: out.String(), ok: err == nil, time: time.Since(start), peak: peak}
			if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
				t.Fatalf("statusfold %v: %v", args, err)
			}
			return r
		case <-tick.C:
		}
	}
}

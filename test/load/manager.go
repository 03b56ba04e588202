package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/statusfold/statusfold/test/framework"
)

// Environment variables that turn a test binary into the manager under test (see
// RunManagerHelper): a separate process, so that its CPU time and peak RSS are its own.
const (
	EnvManagerHelper = "STATUSFOLD_LOAD_MANAGER"
	envKubeconfig    = "KUBECONFIG"
	envPprofAddr     = "STATUSFOLD_LOAD_PPROF"
	envMetricsAddr   = "STATUSFOLD_LOAD_METRICS"
	envCoalesce      = "STATUSFOLD_LOAD_COALESCE"
	envWorkers       = "STATUSFOLD_LOAD_WORKERS"
	envMaxDelay      = "STATUSFOLD_LOAD_MAX_WRITE_DELAY"
	envGCPercent     = "STATUSFOLD_LOAD_GC_PERCENT"
	envStartupGC     = "STATUSFOLD_LOAD_STARTUP_GC_PERCENT"
)

// ManagerProcess is a statusfold manager running as a child process.
type ManagerProcess struct {
	Cmd                    *exec.Cmd
	PprofAddr, MetricsAddr string
	// Started is when the process was started.
	Started time.Time
	done    chan error
}

// ManagerOptions configure the child manager.
type ManagerOptions struct {
	Kubeconfig    string
	CoalesceDelay time.Duration
	// MaxWriteDelay is the manager's --max-write-delay (0: pacing off).
	MaxWriteDelay time.Duration
	// GCPercent is the manager's --gc-percent, StartupGCPercent its --startup-gc-percent.
	GCPercent, StartupGCPercent int
	Workers                     int
	// Log receives the manager's output; nil discards it.
	Log io.Writer
}

// StartManager re-runs the current test binary as a manager (TestMain must call
// RunManagerHelper first thing).
func StartManager(ctx context.Context, o ManagerOptions) (*ManagerProcess, error) {
	addrs, err := framework.LoopbackAddrs(2)
	if err != nil {
		return nil, err
	}
	pprofAddr, metricsAddr := addrs[0], addrs[1]
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		EnvManagerHelper+"=1",
		envKubeconfig+"="+o.Kubeconfig,
		envPprofAddr+"="+pprofAddr,
		envMetricsAddr+"="+metricsAddr,
		envCoalesce+"="+o.CoalesceDelay.String(),
		envMaxDelay+"="+o.MaxWriteDelay.String(),
		envGCPercent+"="+strconv.Itoa(o.GCPercent),
		envStartupGC+"="+strconv.Itoa(o.StartupGCPercent),
		envWorkers+"="+strconv.Itoa(o.Workers),
	)
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &ManagerProcess{Cmd: cmd, PprofAddr: pprofAddr, MetricsAddr: metricsAddr, Started: started, done: make(chan error, 1)}
	go func() { m.done <- cmd.Wait() }()
	// Wait until its pprof endpoint answers.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/")
		if err == nil {
			resp.Body.Close()
			return true, nil
		}
		select {
		case err := <-m.done:
			return false, fmt.Errorf("manager exited: %v", err)
		default:
			return false, nil
		}
	})
	switch {
	case err == nil:
		return m, nil
	case wait.Interrupted(err):
		m.Stop()
		return nil, errors.New("manager did not start serving pprof within 30s")
	default:
		return nil, err
	}
}

// Stop ends the manager (SIGINT, then kill) and waits for it.
func (m *ManagerProcess) Stop() {
	_ = m.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.Cmd.Process.Kill()
		<-m.done
	}
}

// ProcStat is a process's CPU time and peak resident set.
type ProcStat struct {
	CPU     time.Duration
	PeakRSS int64
	RSS     int64
}

// cpuMeter measures a process's CPU time from its start; a zero pid measures nothing.
type cpuMeter struct {
	pid   int
	start time.Duration
}

func startCPU(pid int) cpuMeter {
	m := cpuMeter{pid: pid}
	if st, err := ReadProcStat(pid); pid > 0 && err == nil {
		m.start = st.CPU
	} else {
		m.pid = 0
	}
	return m
}

// per is the CPU time used since the start divided by n (0 when not measured).
func (m cpuMeter) per(n int) time.Duration {
	if m.pid == 0 || n <= 0 {
		return 0
	}
	st, err := ReadProcStat(m.pid)
	if err != nil {
		return 0
	}
	return (st.CPU - m.start) / time.Duration(n)
}

// FindAPIServer returns the pid of the kube-apiserver process serving on port, or 0.
func FindAPIServer(port string) int {
	return findProc(func(args []string) bool {
		return filepath.Base(args[0]) == "kube-apiserver" && slices.Contains(args, "--secure-port="+port)
	})
}

// FindEtcd returns the pid of the etcd process that the kube-apiserver apiserverPID uses (the
// one listening on the first of its --etcd-servers), or 0.
func FindEtcd(apiserverPID int) int {
	if apiserverPID == 0 {
		return 0
	}
	var server string
	for _, a := range procArgs(apiserverPID) {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			server, _, _ = strings.Cut(v, ",")
		}
	}
	if server == "" {
		return 0
	}
	return findProc(func(args []string) bool {
		return filepath.Base(args[0]) == "etcd" && slices.ContainsFunc(args, func(a string) bool {
			v, ok := strings.CutPrefix(a, "--listen-client-urls=")
			return ok && slices.Contains(strings.Split(v, ","), server)
		})
	})
}

// procArgs is the command line of pid, or nil.
func procArgs(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// findProc returns the pid of a process whose command line match accepts, or 0.
func findProc(match func(args []string) bool) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if args := procArgs(pid); len(args) > 0 && match(args) {
			return pid
		}
	}
	return 0
}

// clockTicks is USER_HZ on Linux: /proc's unit of CPU and start times.
const clockTicks = 100

// procStatFields returns the fields of /proc/<pid>/stat after the command name (which is in
// parentheses and may hold spaces): the state is [0], stat's field n is [n-3]. It fails when
// there are fewer than want.
func procStatFields(pid, want int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < want {
		return nil, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return fields, nil
}

// ReadProcStat reads /proc/<pid>/stat and /proc/<pid>/status (Linux).
func ReadProcStat(pid int) (ProcStat, error) {
	var st ProcStat
	fields, err := procStatFields(pid, 13)
	if err != nil {
		return st, err
	}
	// utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the name and state.
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	st.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			st.PeakRSS = kb * 1024
		case "VmRSS":
			st.RSS = kb * 1024
		}
	}
	return st, sc.Err()
}

// ScrapeMetrics returns the sum of every sample of each named metric (all label sets) from a
// Prometheus text endpoint; a filter "name{label=\"x\"}" sums only samples whose labels contain
// that text.
func ScrapeMetrics(addr string, names ...string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series, val := line[:sp], line[sp+1:]
		for _, n := range names {
			metric, labelFilter, _ := strings.Cut(n, "{")
			labelFilter = strings.TrimSuffix(labelFilter, "}")
			name, labels, _ := strings.Cut(series, "{")
			if name != metric || !strings.Contains(labels, labelFilter) {
				continue
			}
			v, err := strconv.ParseFloat(val, 64)
			if err == nil {
				out[n] += v
			}
		}
	}
	return out, sc.Err()
}

// fetch saves an HTTP GET to a file.
func fetch(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

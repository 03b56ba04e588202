package load

import (
	"context"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// costMeter measures what a phase costs: the manager's writes and CPU, the apiserver's CPU and
// requests.
type costMeter struct {
	mgr      *ManagerProcess
	before   managerSample
	api      cpuMeter
	requests *apiRequests
}

// startCost starts measuring; apiserver nil: its requests are not read.
func startCost(ctx context.Context, mgr *ManagerProcess, apiserverPID int, apiserver *rest.Config) (*costMeter, error) {
	reqs, err := startRequests(ctx, apiserver)
	if err != nil {
		return nil, err
	}
	s, err := mgr.sample()
	if err != nil {
		return nil, err
	}
	return &costMeter{mgr: mgr, before: s, api: startCPU(apiserverPID), requests: reqs}, nil
}

// per is the cost since the start divided by n updates.
func (m *costMeter) per(ctx context.Context, n int) (Cost, error) {
	after, err := m.mgr.sample()
	if err != nil || n <= 0 {
		return Cost{}, err
	}
	c := Cost{
		WritesPerUpdate:       (after.writes - m.before.writes) / float64(n),
		ManagerCPUPerUpdate:   (after.proc.CPU - m.before.proc.CPU) / time.Duration(n),
		APIServerCPUPerUpdate: m.api.per(n),
	}
	c.Requests, err = m.requests.since(ctx, n)
	return c, err
}

// managerSample is the manager's counters at one time.
type managerSample struct {
	writes float64
	proc   ProcStat
}

func (m *ManagerProcess) sample() (managerSample, error) {
	var s managerSample
	mv, err := ScrapeMetrics(m.MetricsAddr, "statusfold_writes_total")
	if err != nil {
		return s, err
	}
	s.writes = mv["statusfold_writes_total"]
	s.proc, err = ReadProcStat(m.Cmd.Process.Pid)
	return s, err
}

// profileAPIServer takes the apiserver's CPU profile over the next secs seconds in the
// background; the channel reports the outcome (at once when cfg is nil: no profile).
func profileAPIServer(ctx context.Context, cfg *rest.Config, secs int, path string) <-chan error {
	done := make(chan error, 1)
	if cfg == nil {
		done <- nil
		return done
	}
	go func() { done <- fetchAPIServerProfile(ctx, cfg, max(secs, 1), path) }()
	return done
}

// fetchAPIServerProfile writes the apiserver's CPU profile over the next secs seconds to path.
func fetchAPIServerProfile(ctx context.Context, cfg *rest.Config, secs int, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(secs)).
		Timeout(time.Duration(secs+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

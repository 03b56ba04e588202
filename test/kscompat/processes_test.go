package kscompat

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a controller running as a subprocess, its output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (s *space) startProcess(name, bin string, env []string, args ...string) *process {
	s.t.Helper()
	logPath := filepath.Join(s.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		s.t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	s.t.Logf("%s started (pid %d), log %s", name, cmd.Process.Pid, logPath)
	s.t.Cleanup(func() {
		p.stop()
		if s.t.Failed() {
			s.dumpLog(p)
		}
	})
	return p
}

// stop kills the process by its PID (KubeStellar's controller-manager ignores SIGTERM) and waits
// for it to exit, so its ports are free again.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (s *space) dumpLog(p *process) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	const tail = 8000
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	s.t.Logf("last lines of %s's log:\n%s", p.name, b)
}

// freeAddrs are n distinct free loopback addresses for a controller's metrics, probe and pprof
// servers (and webhook ports), on ports below the kernel's ephemeral range: a port from that
// range (a listener on port 0) can be handed out again to another process's outgoing connection
// or port-0 listener before the controller binds it, which on a busy machine happens ("address
// already in use"). All n listeners are open at once before any is closed, so the ports are
// distinct; each is tried on every interface, as servers that take only a port bind.
// (test/framework.LoopbackAddrs, which this module cannot import.)
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for tries := 0; len(addrs) < n; tries++ {
		if tries == 1000 {
			t.Fatal("no free port below the ephemeral range")
		}
		port := 20000 + rand.IntN(32768-20000)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		defer l.Close()
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	return addrs
}

// startKubeStellar runs KubeStellar's controller-manager with the given controllers
// ("binding" or "binding,status"), on ports of its own, against this space's ControlPlanes.
func (s *space) startKubeStellar(controllers string) *process {
	s.t.Helper()
	addrs := freeAddrs(s.t, 3)
	return s.startProcess("kubestellar-"+strings.ReplaceAll(controllers, ",", "-"), kubestellarBin,
		[]string{"KUBECONFIG=" + s.kubeconfig},
		"--controllers="+controllers, "--wds-name="+wdsName, "--its-name="+itsName,
		"--metrics-bind-address="+addrs[0], "--health-probe-bind-address="+addrs[1],
		"--pprof-bind-address="+addrs[2], "-v=2")
}

// waitForLog waits until a process's log has a line containing text.
func (s *space) waitForLog(p *process, text string, timeout time.Duration) {
	s.t.Helper()
	s.eventually(p.name+" logs "+text, timeout, []*process{p}, func(context.Context) (bool, string) {
		b, err := os.ReadFile(p.log)
		return err == nil && strings.Contains(string(b), text), "not yet"
	})
}

// startStatusfold runs `statusfold manager` in external binding mode against this space.
func (s *space) startStatusfold(extra ...string) *process {
	s.t.Helper()
	addrs := freeAddrs(s.t, 2)
	args := append([]string{"manager", "--wds-kubeconfig=" + s.kubeconfig, "--wds-name=" + wdsName,
		"--binding-resolution=external", "--webhooks=false",
		"--metrics-bind-address=" + addrs[0], "--health-probe-bind-address=" + addrs[1]}, extra...)
	return s.startProcess("statusfold", statusfoldBin, nil, args...)
}

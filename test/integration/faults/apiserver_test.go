package faults

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/statusfold/statusfold/test/framework"
)

// TestAPIServerRestart kills the kube-apiserver (SIGKILL) in the middle of a stream of updates
// and starts it again with the same flags (etcd keeps the data); the manager must reconnect on its
// own and converge.
func TestAPIServerRestart(t *testing.T) {
	cp, fx := setup(t, 10, 6, 2)
	m := startManager(t, cp)
	rng := rand.New(rand.NewPCG(9, 9))
	write := func(n int) { writeRandom(t, fx, rng, n, func() int { return rng.IntN(fx.Objects) }, 4) }
	write(300)
	restartAPIServer(t, cp, 3*time.Second)
	write(300)
	requireConverged(t, cp, fx, 90*time.Second)
	if !m.alive() {
		t.Fatalf("the manager exited while the apiserver was away (it should retry)")
	}
}

// restartAPIServer kills the control plane's kube-apiserver, waits, and starts the same binary
// with the same arguments (same certificates, port and etcd). The new process is stopped when the
// test ends.
func restartAPIServer(t *testing.T, cp *framework.ControlPlane, down time.Duration) {
	t.Helper()
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	pid, args := findProcess(t, "kube-apiserver", "--secure-port="+u.Port())
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processExists(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver %d did not exit", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("kube-apiserver (pid %d) killed", pid)
	time.Sleep(down)

	var out bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		var nss corev1.NamespaceList
		if err := cp.Client.List(context.Background(), &nss); err == nil {
			break
		}
		select {
		case <-done:
			t.Fatalf("restarted kube-apiserver exited:\n%s", tail(out.String(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted kube-apiserver not serving after 60s:\n%s", tail(out.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("kube-apiserver restarted (pid %d)", cmd.Process.Pid)
}

// findProcess returns the pid and command line of the process whose executable's base name is
// name and whose arguments include arg.
func findProcess(t *testing.T, name, arg string) (int, []string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, args
			}
		}
	}
	t.Fatalf("no %s process with %s", name, arg)
	return 0, nil
}

func processExists(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	// A killed child that its parent has not reaped yet is a zombie: state Z.
	return err == nil && !strings.Contains(string(b), ") Z ")
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/statusfold/statusfold/local"
	"github.com/statusfold/statusfold/webhooks"
)

// run is one `statusfold local` subprocess with its output collected.
type run struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{} // closed when the output ends
}

func (r *run) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// startLocal starts `statusfold local ARGS…` and waits for its ready line.
func startLocal(t *testing.T, bin string, args ...string) *run {
	t.Helper()
	r := &run{cmd: exec.Command(bin, append([]string{"local"}, args...)...), done: make(chan struct{})}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		signalled := false
		for sc.Scan() {
			r.mu.Lock()
			r.out.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if !signalled && strings.HasPrefix(sc.Text(), local.ReadyLine) {
				signalled = true
				close(ready)
			}
		}
	}()
	t.Cleanup(func() {
		// Only if the test failed half-way: stop it and its children.
		if r.cmd.ProcessState == nil {
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			_ = r.cmd.Wait()
		}
	})
	select {
	case <-ready:
	case <-r.done:
		t.Fatalf("statusfold local exited before it was ready:\n%s", r.output())
	case <-time.After(120 * time.Second):
		t.Fatalf("statusfold local not ready after 120s:\n%s", r.output())
	}
	return r
}

// stop sends SIGINT and waits for a clean exit.
func (r *run) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { <-r.done; exited <- r.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("statusfold local exited with %v after SIGINT:\n%s", err, r.output())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("statusfold local still running 60s after SIGINT:\n%s", r.output())
	}
	if !strings.Contains(r.output(), "statusfold local stopped") {
		t.Errorf("no 'statusfold local stopped' line:\n%s", r.output())
	}
}

var exportRE = regexp.MustCompile(`(?m)^export KUBECONFIG=(.+)$`)

// children lists the processes whose parent is pid, with their command lines.
func children(t *testing.T, pid int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc")
	}
	out := map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces, so split after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[p] = strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	return out
}

var portFlagRE = regexp.MustCompile(`--(?:listen-client-urls|listen-peer-urls|secure-port)=(?:https?://127\.0\.0\.1:)?(\d+)`)

// localProcesses returns the child processes of statusfold local (by pid: their command lines),
// which must be etcd and kube-apiserver, and every port it serves on: the children's ports, the
// apiserver's in the kubeconfig kc, the webhooks'.
func localProcesses(ctx context.Context, t *testing.T, r *run, kc string) (map[int]string, map[string]bool) {
	t.Helper()
	kids := children(t, r.cmd.Process.Pid)
	ports := map[string]bool{}
	for _, cmdline := range kids {
		for _, pm := range portFlagRE.FindAllStringSubmatch(cmdline, -1) {
			ports[pm[1]] = true
		}
	}
	if len(kids) != 2 || len(ports) < 3 {
		t.Errorf("children %v with ports %v, want etcd and kube-apiserver with 3 ports", kids, ports)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		ports[u.Port()] = true
	}
	whURL, stderr, err := kubectl(ctx, kc, "", "get", "validatingwebhookconfiguration", webhooks.ValidatingConfigurationName, "-o", "jsonpath={.webhooks[0].clientConfig.url}")
	if err != nil {
		t.Fatalf("reading the webhook configuration: %v %s", err, stderr)
	}
	if u, err := url.Parse(whURL); err == nil && u.Port() != "" {
		ports[u.Port()] = true
	} else {
		t.Errorf("webhook URL %q has no port", whURL)
	}
	return kids, ports
}

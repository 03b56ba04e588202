// Package e2e runs the statusfold binary end to end: `statusfold local --demo` as a subprocess,
// driven with the kubectl built for the same Kubernetes version, as a user would.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
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

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/local"
	"github.com/statusfold/statusfold/test/framework"
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

func kubectl(ctx context.Context, kubeconfig string, stdin string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(framework.AssetsDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

const badCollector = `apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata:
  name: bad-collector
spec:
  select:
  - name: wec
    def: inventory.nam
`

// plain renders a result's rows as text cells, e.g. [["eu-west","2"],["us-east","2"]].
func plain(r controlv1alpha1.NamedStatusCombination) [][]string {
	rows := [][]string{}
	for _, row := range r.Rows {
		cells := []string{}
		for _, v := range row.Columns {
			switch {
			case v.String != nil:
				cells = append(cells, *v.String)
			case v.Number != nil:
				cells = append(cells, *v.Number)
			default:
				cells = append(cells, string(v.Type))
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestLocalDemo is the tour: statusfold local --demo comes up, a bad collector is rejected, the
// CombinedStatus of the demo Deployment reaches the rows the seed-1 scenario leads to, the kubectl
// plugin shows each WEC's health, and Ctrl-C stops every process and frees every port. A second
// run on the same --data-dir finds the state of the first.
func TestLocalDemo(t *testing.T) {
	framework.RequireIntegration(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "statusfold")
	build := exec.Command("go", "build", "-o", bin, "./cmd/statusfold")
	build.Dir = framework.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dataDir := filepath.Join(tmp, "data")

	r := startLocal(t, bin, "--demo", "--data-dir", dataDir)
	m := exportRE.FindStringSubmatch(r.output())
	if m == nil {
		t.Fatalf("no 'export KUBECONFIG=' line:\n%s", r.output())
	}
	kc := strings.TrimSpace(m[1])
	if kc != filepath.Join(dataDir, "kubeconfig") {
		t.Errorf("kubeconfig %s, want it in the data folder", kc)
	}

	// The processes and ports that must be gone after Ctrl-C.
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

	// A bad collector is rejected at kubectl apply, naming the field.
	_, stderr, err = kubectl(ctx, kc, badCollector, "apply", "-f", "-")
	if err == nil {
		t.Errorf("kubectl apply of a bad collector succeeded")
	}
	for _, want := range []string{`The StatusCollector "bad-collector" is invalid`, "spec.select[0].def", "undefined field 'nam'"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl apply stderr lacks %q:\n%s", want, stderr)
		}
	}

	// The CombinedStatus of nginx under nginx-multi settles on the seed-1 scenario's end state:
	// wec3 (ap-south) has left, wec1 caught up, wec5 failed with ProgressDeadlineExceeded.
	want := map[string][][]string{
		"count-wecs":                  {{"4"}},
		"wecs-by-region":              {{"eu-west", "2"}, {"us-east", "2"}},
		"wecs-not-reporting":          {},
		"not-as-available-as-desired": {{"wec5"}},
		"deployment-ready-total":      {{"4", "12", "10", "1"}},
		"deployment-rollout-progress": {
			{"wec1", "3", "3", "NewReplicaSetAvailable"},
			{"wec2", "3", "3", "NewReplicaSetAvailable"},
			{"wec4", "3", "3", "NewReplicaSetAvailable"},
			{"wec5", "1", "3", "ProgressDeadlineExceeded"},
		},
	}
	var got map[string][][]string
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, _, err := kubectl(ctx, kc, "", "get", "combinedstatuses", "-n", "demo", "-o", "json", "-l",
			"status.kubestellar.io/name=nginx,status.kubestellar.io/binding-policy=nginx-multi")
		got = map[string][][]string{}
		if err == nil {
			var list controlv1alpha1.CombinedStatusList
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatal(err)
			}
			for _, cs := range list.Items {
				for _, res := range cs.Results {
					if _, ok := want[res.Name]; ok {
						got[res.Name] = plain(res)
					}
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CombinedStatus rows after 90s:\n got %v\nwant %v", got, want)
		}
		time.Sleep(2 * time.Second)
	}

	// The aggregate in the Deployment's own .status keeps the failing WEC's reason.
	reason, _, err := kubectl(ctx, kc, "", "get", "deployment", "nginx", "-n", "demo",
		"-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].reason}`)
	if err != nil || reason != "ProgressDeadlineExceeded" {
		t.Errorf("aggregated Progressing reason %q (%v), want ProgressDeadlineExceeded", reason, err)
	}

	// The kubectl plugin: the same binary as kubectl-statusfold on the PATH.
	pluginDir := filepath.Join(tmp, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(pluginDir, "kubectl-statusfold")); err != nil {
		t.Fatal(err)
	}
	plug := exec.Command(filepath.Join(framework.AssetsDir(), "kubectl"), "statusfold", "status", "deployment/nginx", "-n", "demo")
	plug.Env = append(os.Environ(), "KUBECONFIG="+kc, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	pout, err := plug.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl statusfold status: %v\n%s", err, pout)
	}
	for _, re := range []string{
		`(?m)^Health: Degraded`,
		`(?m)^wec1\s+Healthy\s`,
		`(?m)^wec5\s+Degraded\s`,
		`(?m)^wecs-by-region:\nregion\s+wecs\neu-west\s+2\nus-east\s+2$`,
	} {
		if !regexp.MustCompile(re).Match(pout) {
			t.Errorf("kubectl statusfold status output does not match %s:\n%s", re, pout)
		}
	}

	// Scriptable output, after waiting (with a progress display on stderr) for every WEC.
	jsonCmd := exec.Command(bin, "status", "jobs.batch/pi", "-n", "demo", "--wait", "60s", "-o", "json")
	jsonCmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	jout, err := jsonCmd.Output()
	if err != nil {
		t.Fatalf("statusfold status -o json: %v", err)
	}
	var rep struct {
		Object struct{ Kind, Resource string }
		WECs   []struct {
			Name     string
			Reported bool
			Health   struct{ Status string }
		}
		CombinedStatuses []struct {
			BindingPolicy string
			Results       []controlv1alpha1.NamedStatusCombination
		}
	}
	if err := json.Unmarshal(jout, &rep); err != nil {
		t.Fatalf("%v\n%s", err, jout)
	}
	wecHealth := map[string]string{}
	for _, w := range rep.WECs {
		wecHealth[w.Name] = w.Health.Status
	}
	wantHealth := map[string]string{"wec1": "Healthy", "wec2": "Healthy", "wec4": "Healthy", "wec5": "Degraded"}
	if rep.Object.Kind != "Job" || rep.Object.Resource != "jobs" || fmt.Sprint(wecHealth) != fmt.Sprint(wantHealth) {
		t.Errorf("status -o json: object %+v, WEC health %v, want Job/jobs and %v", rep.Object, wecHealth, wantHealth)
	}
	var outcomes [][]string
	for _, cs := range rep.CombinedStatuses {
		for _, res := range cs.Results {
			if res.Name == "job-outcomes" {
				outcomes = plain(res)
			}
		}
	}
	if want := [][]string{{"Complete", "3", "9", "0"}, {"Failed", "1", "0", "3"}}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("job-outcomes rows %v, want %v", outcomes, want)
	}

	// Ctrl-C stops everything: no child process, no listening port.
	r.stop(t)
	for pid, cmdline := range kids {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			t.Errorf("process %d (%s) still exists after statusfold local exited", pid, cmdline)
		}
	}
	for p := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			t.Errorf("port %s still accepts connections after statusfold local exited", p)
		}
	}
	if _, err := os.Stat(kc); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s left behind (its certificates are dead): %v", kc, err)
	}

	// --data-dir keeps state: a second run (no demo) still has the demo's objects.
	r2 := startLocal(t, bin, "--data-dir", dataDir)
	out, stderr, err := kubectl(ctx, kc, "", "get", "deployment", "nginx", "-n", "demo", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "deployment.apps/nginx" {
		t.Errorf("after restart on the same --data-dir: %q %s %v", out, stderr, err)
	}
	r2.stop(t)
}

// Package e2e runs the statusfold binary end to end: `statusfold local --demo` as a subprocess,
// driven with the kubectl built for the same Kubernetes version, as a user would.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

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
	kids, ports := localProcesses(ctx, t, r, kc)

	// A bad collector is rejected at kubectl apply, naming the field.
	_, stderr, err := kubectl(ctx, kc, badCollector, "apply", "-f", "-")
	if err == nil {
		t.Errorf("kubectl apply of a bad collector succeeded")
	}
	for _, want := range []string{`The StatusCollector "bad-collector" is invalid`, "spec.select[0].def", "undefined field 'nam'"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl apply stderr lacks %q:\n%s", want, stderr)
		}
	}

	awaitDemoRows(ctx, t, kc)
	// The aggregate in the Deployment's own .status keeps the failing WEC's reason.
	reason, _, err := kubectl(ctx, kc, "", "get", "deployment", "nginx", "-n", "demo",
		"-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].reason}`)
	if err != nil || reason != "ProgressDeadlineExceeded" {
		t.Errorf("aggregated Progressing reason %q (%v), want ProgressDeadlineExceeded", reason, err)
	}
	checkKubectlPlugin(t, bin, filepath.Join(tmp, "plugins"), kc)
	checkStatusJSON(t, bin, kc)

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

// demoRows is the end state of the seed-1 scenario in the CombinedStatus of nginx under
// nginx-multi: wec3 (ap-south) has left, wec1 caught up, wec5 failed with
// ProgressDeadlineExceeded.
var demoRows = map[string][][]string{
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

// awaitDemoRows waits until the CombinedStatus of nginx under nginx-multi settles on demoRows.
func awaitDemoRows(ctx context.Context, t *testing.T, kc string) {
	t.Helper()
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
					if _, ok := demoRows[res.Name]; ok {
						got[res.Name] = plain(res)
					}
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(demoRows) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CombinedStatus rows after 90s:\n got %v\nwant %v", got, demoRows)
		}
		time.Sleep(2 * time.Second) // the poll's interval
	}
}

// checkKubectlPlugin runs the binary as the kubectl plugin kubectl-statusfold (a link in
// pluginDir, on the PATH): it shows each WEC's health.
func checkKubectlPlugin(t *testing.T, bin, pluginDir, kc string) {
	t.Helper()
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
}

// checkStatusJSON checks the scriptable output of `statusfold status -o json` for the demo Job,
// after waiting (with a progress display on stderr) for every WEC.
func checkStatusJSON(t *testing.T, bin, kc string) {
	t.Helper()
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
}

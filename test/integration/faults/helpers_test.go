package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/test/load"
)

// binary is the statusfold binary built by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	framework.MainWithStatusfold(m, &binary)
}

// manager is one `statusfold manager` child process.
type manager struct {
	cmd         *exec.Cmd
	metricsAddr string
	log         *bytes.Buffer
	done        chan struct{}
}

// startManager runs `statusfold manager` against the control plane. It finds the control plane
// through $KUBECONFIG, as in a cluster it would find it in-cluster.
func startManager(t *testing.T, cp *framework.ControlPlane, extra ...string) *manager {
	t.Helper()
	addr := framework.FreeAddr(t)
	args := append([]string{"manager", "--webhooks=false", "--wds-name=" + load.WDSName,
		"--health-probe-bind-address=0", "--metrics-bind-address=" + addr, "--coalesce-delay=20ms"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig)
	m := &manager{cmd: cmd, metricsAddr: addr, log: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = m.log, m.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("manager %d log (tail):\n%s", cmd.Process.Pid, tail(m.log.String(), 3000))
		}
	})
	return m
}

// kill sends SIGKILL and waits for the process to end.
func (m *manager) kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// alive says whether the process is still running.
func (m *manager) alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// isLeader reads controller-runtime's leader election gauge from the manager's metrics.
func (m *manager) isLeader() bool {
	v, err := load.ScrapeMetrics(m.metricsAddr, "leader_election_master_status")
	return err == nil && v["leader_election_master_status"] == 1
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// writeRandom writes n updates, each to a random (WEC, object) pair with a random number of
// ready replicas below readyBelow, about 2 ms apart.
func writeRandom(t *testing.T, fx *load.Fixture, rng *rand.Rand, n int, pickObject func() int, readyBelow int) {
	t.Helper()
	for range n {
		if _, _, err := fx.Write(context.Background(), rng.IntN(fx.WECs), pickObject(), int64(rng.IntN(readyBelow))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// expected computes, with the engines directly, what statusfold should have written for every
// object of the fixture: the CombinedStatus results and, for multi-WEC objects, the returned
// status.
type expected struct {
	results  map[string][]controlv1alpha1.NamedStatusCombination // by object name
	returned map[string]map[string]any
}

func computeExpected(ctx context.Context, t *testing.T, c client.Client, fx *load.Fixture) (*expected, error) {
	t.Helper()
	comp, err := collector.NewCompiler()
	if err != nil {
		return nil, err
	}
	var cols []*collector.Collector
	for _, u := range load.Collectors() {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, &sc); err != nil {
			return nil, err
		}
		col, errs, _ := comp.Compile(&sc)
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		cols = append(cols, col)
	}
	sort.Slice(cols, func(a, b int) bool { return cols[a].Name() < cols[b].Name() })
	var mcs clusterv1.ManagedClusterList
	if err := c.List(ctx, &mcs); err != nil {
		return nil, err
	}
	labels := map[string]map[string]string{}
	for _, mc := range mcs.Items {
		labels[mc.Name] = mc.Labels
	}
	var wss controlv1alpha1.WorkStatusList
	if err := c.List(ctx, &wss); err != nil {
		return nil, err
	}
	byObject := map[string][]controlv1alpha1.WorkStatus{}
	for _, ws := range wss.Items {
		if ws.Labels[controlv1alpha1.LabelOriginWDSName] == load.WDSName {
			byObject[ws.Spec.SourceRef.Name] = append(byObject[ws.Spec.SourceRef.Name], ws)
		}
	}
	eng, err := aggregation.NewEngine()
	if err != nil {
		return nil, err
	}
	exp := &expected{results: map[string][]controlv1alpha1.NamedStatusCombination{}, returned: map[string]map[string]any{}}
	for j := range fx.Objects {
		name := load.ObjectName(j)
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: load.ObjectNamespace, Name: name}, obj); err != nil {
			return nil, err
		}
		delete(obj.Object, "status")
		var cw []collector.WEC
		var aw []aggregation.WEC
		for _, ws := range byObject[name] {
			var status map[string]any
			if err := json.Unmarshal(ws.Status.Raw, &status); err != nil {
				return nil, err
			}
			cw = append(cw, collector.WEC{Name: ws.Namespace, Labels: labels[ws.Namespace], Status: status})
			details := ws.StatusDetails
			aw = append(aw, aggregation.WEC{Name: ws.Namespace, Status: status, Details: &details})
		}
		exp.results[name] = collector.Evaluate(obj.Object, cw, cols)
		if fx.IsMulti(j) {
			if exp.returned[name], err = eng.Returned(schema.GroupKind{Group: "apps", Kind: "Deployment"}, obj.Object, aw); err != nil {
				return nil, err
			}
		}
	}
	return exp, nil
}

// mismatch compares what statusfold wrote with exp and describes the first difference. The
// returned status of the object with index skip (-1: none) is not compared.
func mismatch(ctx context.Context, c client.Client, fx *load.Fixture, exp *expected, skip int) (string, error) {
	var css controlv1alpha1.CombinedStatusList
	if err := c.List(ctx, &css, client.InNamespace(load.ObjectNamespace)); err != nil {
		return "", err
	}
	got := map[string][]controlv1alpha1.NamedStatusCombination{}
	for _, cs := range css.Items {
		got[cs.Labels[controlv1alpha1.LabelCombinedStatusName]] = cs.Results
	}
	for j := range fx.Objects {
		name := load.ObjectName(j)
		if !apiequality.Semantic.DeepEqual(normalizeResults(got[name]), normalizeResults(exp.results[name])) {
			g, _ := json.Marshal(got[name])
			w, _ := json.Marshal(exp.results[name])
			return fmt.Sprintf("CombinedStatus of %s:\n got %s\nwant %s", name, g, w), nil
		}
		if !fx.IsMulti(j) || j == skip {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: load.ObjectNamespace, Name: name}, obj); err != nil {
			return "", err
		}
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if !aggregation.SameJSON(typedDeploymentStatus(status), typedDeploymentStatus(exp.returned[name])) {
			g, _ := json.Marshal(status)
			w, _ := json.Marshal(exp.returned[name])
			return fmt.Sprintf("returned status of %s:\n got %s\nwant %s", name, g, w), nil
		}
	}
	return "", nil
}

// typedDeploymentStatus reads a status as the apiserver stores a Deployment's: through the typed
// struct, whose omitempty fields drop zero values.
func typedDeploymentStatus(m map[string]any) any {
	b, _ := json.Marshal(m)
	var ds appsv1.DeploymentStatus
	if err := json.Unmarshal(b, &ds); err != nil {
		return m
	}
	b, _ = json.Marshal(ds)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// normalizeResults makes nil and empty lists compare equal (JSON omits both).
func normalizeResults(rs []controlv1alpha1.NamedStatusCombination) []controlv1alpha1.NamedStatusCombination {
	b, _ := json.Marshal(rs)
	var out []controlv1alpha1.NamedStatusCombination
	_ = json.Unmarshal(b, &out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// requireConverged waits until what statusfold wrote equals a fresh evaluation of the current
// inputs, and fails with the first difference when it does not happen within the timeout.
func requireConverged(t *testing.T, cp *framework.ControlPlane, fx *load.Fixture, timeout time.Duration) {
	t.Helper()
	requireConvergedExcept(t, cp, fx, -1, timeout)
}

// requireConvergedExcept is requireConverged without the returned status of object skip.
func requireConvergedExcept(t *testing.T, cp *framework.ControlPlane, fx *load.Fixture, skip int, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	for {
		exp, err := computeExpected(ctx, t, cp.Client, fx)
		if err != nil {
			t.Fatalf("computing the expected state: %v", err)
		}
		diff, err := mismatch(ctx, cp.Client, fx, exp, skip)
		if err != nil {
			t.Fatal(err)
		}
		if diff == "" {
			t.Logf("converged %s after the last write", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged after %s; first difference: %s", timeout, diff)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// setup starts a control plane with a small fixture: wecs WECs × objects Deployments, every
// multiEvery-th with multi-WEC return.
func setup(t *testing.T, wecs, objects, multiEvery int) (*framework.ControlPlane, *load.Fixture) {
	t.Helper()
	cp := framework.RunControlPlane(t)
	fx := &load.Fixture{WECs: wecs, Objects: objects, MultiEvery: multiEvery, Workers: 4}
	if _, err := fx.Setup(context.Background(), cp.Config); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return cp, fx
}

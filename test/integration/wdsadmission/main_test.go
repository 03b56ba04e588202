package wdsadmission

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/kubeflex"
	"github.com/statusfold/statusfold/test/framework"
)

// binary is the statusfold binary built by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	framework.MainWithStatusfold(m, &binary)
}

// controlPlane is a KubeFlex ControlPlane as KubeStellar's core chart makes it: labelled with its
// role, of type typ, and (unless typ is host) with its kubeconfig in Secret <name>-system/secret.
func controlPlane(name, role, typ, secret string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kubeflex.ControlPlaneGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{kubeflex.TypeLabel: role})
	_ = unstructured.SetNestedField(u.Object, typ, "spec", "type")
	if secret != "" {
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"namespace": name + "-system", "name": secret,
			"key": "kubeconfig", "inClusterKey": "kubeconfig-incluster"}, "status", "secretRef")
	}
	return u
}

// kubeconfigSecret is the Secret KubeFlex writes for a ControlPlane: the kubeconfig of cp.
func kubeconfigSecret(t *testing.T, ns, name string, cp *framework.ControlPlane) *corev1.Secret {
	t.Helper()
	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"kubeconfig": b, "kubeconfig-incluster": b}}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// process is a statusfold child process whose output is kept for waitLog.
type process struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startManager runs `statusfold manager args…` with KUBECONFIG set to the hosting cluster's,
// and stops it when the test ends (its log is shown when the test failed).
func startManager(t *testing.T, hostingKubeconfig string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, append([]string{"manager"}, args...)...)}
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+hostingKubeconfig, "POD_NAMESPACE=")
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("manager log:\n%s", p.log())
		}
	})
	return p
}

// eventually polls cond until it holds, failing the test with the last reason after timeout.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var why string
	if wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, why = cond()
		return ok, nil
	}) != nil {
		t.Fatalf("%s: not within %s: %s", what, timeout, why)
	}
}

// waitLog waits until the process's log holds text.
func (p *process) waitLog(t *testing.T, text string, timeout time.Duration) {
	t.Helper()
	eventually(t, "log line "+text, timeout, func() (bool, string) {
		if p.cmd.ProcessState != nil {
			return false, "the manager exited"
		}
		return strings.Contains(p.log(), text), "not yet"
	})
}

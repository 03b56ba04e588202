package kscompat

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kfv1alpha1 "github.com/kubestellar/kubeflex/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// topology is KubeStellar's own topology, as its core chart makes it: a hosting cluster holding
// KubeFlex ControlPlanes and their kubeconfig Secrets, an ITS (type vcluster) and WDSes (type k8s),
// each its own kube-apiserver with its own etcd.
type topology struct {
	t       *testing.T
	hosting *space
	its     *space
	wdses   map[string]*space
}

// startTopology starts the hosting cluster (KubeFlex's ControlPlane and PostCreateHook CRDs) and
// the ITS (OCM's ManagedCluster and KubeStellar's WorkStatus CRDs), and registers the ITS's
// ControlPlane its1.
func startTopology(t *testing.T) *topology {
	t.Helper()
	requireAssets(t)
	root := repoRoot()
	tp := &topology{t: t, wdses: map[string]*space{},
		hosting: startAPIServer(t, kubeflexCRD(t, "controlplanes"), kubeflexCRD(t, "postcreatehooks")),
		its: startAPIServer(t, filepath.Join(root, "config", "crd", "external"),
			filepath.Join(root, "config", "crd", "bases", "control.kubestellar.io_workstatuses.yaml")),
	}
	tp.registerControlPlane(itsName, "its", kfv1alpha1.ControlPlaneTypeVCluster, "vc-vcluster", tp.its)
	return tp
}

// addWDS starts a WDS with no CRDs (KubeStellar's controller-manager installs its own) and
// registers its ControlPlane.
func (tp *topology) addWDS(name string) *space {
	tp.t.Helper()
	wds := startAPIServer(tp.t)
	tp.registerControlPlane(name, "wds", kfv1alpha1.ControlPlaneTypeK8S, "admin-kubeconfig", wds)
	tp.wdses[name] = wds
	return wds
}

// registerControlPlane creates what KubeFlex leaves in the hosting cluster for a control plane:
// namespace <name>-system with the kubeconfig Secret, and the ControlPlane, of type typ, whose
// status (through /status) names that Secret.
func (tp *topology) registerControlPlane(name, role string, typ kfv1alpha1.ControlPlaneType, secret string, of *space) {
	tp.t.Helper()
	h := tp.hosting
	kc, err := os.ReadFile(of.kubeconfig)
	if err != nil {
		tp.t.Fatal(err)
	}
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name + "-system"}})
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: name + "-system"},
		Data: map[string][]byte{"kubeconfig": kc, "kubeconfig-incluster": kc}})
	cp := &kfv1alpha1.ControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kflex.kubestellar.io/cptype": role}},
		Spec:       kfv1alpha1.ControlPlaneSpec{Type: typ},
	}
	h.create(cp)
	cp.Status = kfv1alpha1.ControlPlaneStatus{Conditions: []kfv1alpha1.ControlPlaneCondition{},
		SecretRef: &kfv1alpha1.SecretReference{Namespace: name + "-system", Name: secret, Key: "kubeconfig", InClusterKey: "kubeconfig-incluster"}}
	if err := h.c.Status().Update(context.Background(), cp); err != nil {
		tp.t.Fatalf("setting the status of ControlPlane %s: %v", name, err)
	}
}

// startKubeStellar applies KubeStellar's controller-manager Deployment for wds as KubeFlex
// applies the core chart's hook kubestellar-controller, runs `statusfold kubestellar takeover`
// on it, and runs the controller-manager with the Deployment's arguments (so the hook's plus
// --controllers=binding), its three listening addresses moved to free ports, against the
// hosting cluster.
func (tp *topology) startKubeStellar(wds string) *process {
	tp.t.Helper()
	h := tp.hosting
	if err := h.kubeflexApply(wds, h.kubeflexRender(coreChartHook(tp.t), wds, coreChartVars)); err != nil {
		tp.t.Fatal(err)
	}
	tp.t.Log(h.statusfoldCLI("kubestellar", "takeover", "--wds-name", wds))
	args, _ := h.managerArgsOf(types.NamespacedName{Namespace: wds + "-system", Name: "kubestellar-controller-manager"})
	addrs := freeAddrs(tp.t, 3)
	args = withFlags(args, map[string]string{"--metrics-bind-address": addrs[0], "--health-probe-bind-address": addrs[1], "--pprof-bind-address": addrs[2]})
	return h.startProcess("kubestellar-"+wds, kubestellarBin, []string{"KUBECONFIG=" + h.kubeconfig}, args...)
}

// installStatusfold installs the chart as release wds in <wds>-system of the hosting cluster, as
// docs/install.md ("With KubeStellar's core chart") does, the webhooks served at port and called
// by the WDS at https://127.0.0.1:port (webhooks.wdsURL: the manager runs beside the apiservers,
// not in a pod behind the Service).
func (tp *topology) installStatusfold(wds string, port int) {
	tp.t.Helper()
	tp.hosting.helm("install", wds, filepath.Join(repoRoot(), "charts", "statusfold"), "--namespace", wds+"-system", "--skip-crds",
		"--set", "wdsName="+wds, "--set", "bindingResolution=external", "--set", "kubeflex.enabled=true", "--set", "kubeflex.itsName="+itsName,
		"--set", "webhooks.port="+strconv.Itoa(port), "--set", "webhooks.wdsURL=https://127.0.0.1:"+strconv.Itoa(port))
}

// startStatusfold runs the manager of release wds with the arguments of the chart's Deployment
// (metrics and probe addresses moved to free ports, the certificate folder to one of its own, the
// Lease's namespace named as the pod's would be), authenticated in the hosting cluster as the
// chart's ServiceAccount: a client certificate for the user
// system:serviceaccount:<wds>-system:<wds>-statusfold-manager and its groups.
func (tp *topology) startStatusfold(wds string) *process {
	tp.t.Helper()
	h, ns, sa := tp.hosting, wds+"-system", wds+"-statusfold-manager"
	user, err := h.env.AddUser(envtest.User{Name: "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}}, nil)
	if err != nil {
		tp.t.Fatal(err)
	}
	kc, err := kubeconfigBytes(user.Config())
	if err != nil {
		tp.t.Fatal(err)
	}
	kcPath := filepath.Join(h.dir, sa+".kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		tp.t.Fatal(err)
	}
	args, _ := h.managerArgsOf(types.NamespacedName{Namespace: ns, Name: sa})
	addrs := freeAddrs(tp.t, 2)
	args = withFlags(args, map[string]string{"--metrics-bind-address": addrs[0], "--health-probe-bind-address": addrs[1],
		"--webhook-cert-dir": filepath.Join(h.dir, wds+"-certs"), "--leader-election-namespace": ns})
	p := h.startProcess("statusfold-"+wds, statusfoldBin, []string{"KUBECONFIG=" + kcPath, "POD_NAMESPACE=" + ns}, args...)
	// Ready: the spaces found, admission registered in the WDS, the webhook server serving.
	h.eventually("statusfold-"+wds+" ready", 2*time.Minute, []*process{p}, func(ctx context.Context) (bool, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addrs[1]+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, string(b)
	})
	return p
}

// withFlags is args with each --flag=value of set replaced, or added when args lack it.
func withFlags(args []string, set map[string]string) []string {
	out := make([]string, 0, len(args)+len(set))
	done := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := set[name]; ok {
			a, done[name] = name+"="+v, true
		}
		out = append(out, a)
	}
	for name, v := range set {
		if !done[name] {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// helm runs Helm against the space.
func (s *space) helm(args ...string) string {
	s.t.Helper()
	return s.run(helmBin(s.t), append(args, "--kubeconfig", s.kubeconfig), "HELM_CACHE_HOME="+s.dir+"/helm-cache",
		"HELM_CONFIG_HOME="+s.dir+"/helm-config", "HELM_DATA_HOME="+s.dir+"/helm-data")
}

// kubectl runs the kubectl built for the apiserver's version against the space, returning its
// output and error (an *exec.ExitError when it exits non-zero) for the caller to judge.
func (s *space) kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(assetsDir(), "kubectl"), append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// run runs a command with env added, failing the test when it fails.
func (s *space) run(bin string, args []string, env ...string) string {
	s.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out)
}

package kscompat

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kfv1alpha1 "github.com/kubestellar/kubeflex/api/v1alpha1"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// The names under which KubeStellar finds its spaces (KubeFlex ControlPlanes) and statusfold is
// told its WDS name.
const (
	wdsName = "wds1"
	itsName = "its1"
	// kubeconfigNamespace holds the Secret the ControlPlanes point at.
	kubeconfigNamespace = "kubeflex-system"
)

var (
	statusfoldBin  string // built once by TestMain (or $STATUSFOLD_BIN)
	kubestellarBin string // $KUBESTELLAR_ASSETS/controller-manager
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime; the tests log what matters
	if testing.Short() {
		os.Exit(m.Run())
	}
	var cleanup func()
	var err error
	statusfoldBin, cleanup, err = buildStatusfold()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// repoRoot is the statusfold repository: this module lives in test/kscompat.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// buildStatusfold builds cmd/statusfold from the repository, unless $STATUSFOLD_BIN names a binary.
// statusfold runs as its real binary: its module pins k8s v0.37 and cel-go v0.30, this one
// KubeStellar's k8s v0.32 and cel-go v0.22, and one build cannot hold both.
func buildStatusfold() (string, func(), error) {
	if b := os.Getenv("STATUSFOLD_BIN"); b != "" {
		return b, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "kscompat-statusfold-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "statusfold")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/statusfold")
	cmd.Dir = repoRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building statusfold: %w", err)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// assetsDir is where the control-plane binaries are ($KUBEBUILDER_ASSETS, else the cache folder
// of `make envtest-assets`).
func assetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "statusfold", "k8s", "v1.37.2")
}

// kubestellarDir is where hack/kubestellar-assets.sh puts KubeStellar's controller-manager.
func kubestellarDir() string {
	if d := os.Getenv("KUBESTELLAR_ASSETS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "statusfold", "kubestellar", "v0.30.0")
}

// requireAssets skips under -short and fails, naming the make target, when a binary is missing.
func requireAssets(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane and KubeStellar's controller-manager (not run with -short)")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assetsDir(), b)); err != nil {
			t.Fatalf("control-plane binary %s missing in %s: run `make envtest-assets`", b, assetsDir())
		}
	}
	kubestellarBin = filepath.Join(kubestellarDir(), "controller-manager")
	if _, err := os.Stat(kubestellarBin); err != nil {
		t.Fatalf("%s missing: run `make kubestellar-assets`", kubestellarBin)
	}
}

// modDir is the folder of a module of this module's build list in the module cache.
func modDir(t testing.TB, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("locating module %s: %v (run `go mod download` in test/kscompat)", module, err)
	}
	return strings.TrimSpace(string(out))
}

func newScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, ksv1alpha1.AddToScheme,
		kfv1alpha1.AddToScheme, clusterv1.Install} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// The harness mirrors test/framework (RunControlPlane, FreeAddr, WriteKubeconfig): that package
// lives in statusfold's module, and importing it would pull statusfold's Kubernetes v0.37 into this
// module's build, so KubeStellar's code here would no longer be built as KubeStellar builds it.

// space is one kube-apiserver that is KubeFlex hosting cluster, WDS and ITS at once, with
// statusfold's CRDs, OCM's ManagedCluster CRD and KubeFlex's ControlPlane CRD installed, and the
// two ControlPlanes that KubeStellar looks for.
type space struct {
	t          testing.TB
	env        *envtest.Environment
	cfg        *rest.Config
	c          client.Client
	kubeconfig string // admin kubeconfig file, CA embedded
	dir        string
}

func startSpace(t testing.TB) *space {
	t.Helper()
	requireAssets(t)
	root := repoRoot()
	s := startAPIServer(t,
		filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(root, "config", "crd", "external"),
		kubeflexCRD(t, "controlplanes"))
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s.registerControlPlanes(kc)
	return s
}

// kubeflexCRD is the file of KubeFlex's CRD of resource (controlplanes, postcreatehooks).
func kubeflexCRD(t testing.TB, resource string) string {
	return filepath.Join(modDir(t, "github.com/kubestellar/kubeflex"), "config", "crd", "bases", "tenancy.kflex.kubestellar.org_"+resource+".yaml")
}

// startAPIServer starts a kube-apiserver with its own etcd and the CRDs of crdPaths (none: a
// cluster with only Kubernetes' own kinds), stopped when the test ends.
func startAPIServer(t testing.TB, crdPaths ...string) *space {
	t.Helper()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assetsDir(),
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		Scheme:                newScheme(),
	}
	env.ControlPlane.GetAPIServer().Configure().Set("profiling", "false")
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping control plane: %v", err)
		}
	})
	t.Logf("control plane up in %s at %s", time.Since(start).Round(time.Millisecond), cfg.Host)
	cfg.QPS, cfg.Burst = -1, 0 // the tests poll; no client-side throttling
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	s := &space{t: t, env: env, cfg: cfg, c: c, dir: t.TempDir()}
	kc, err := kubeconfigBytes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.kubeconfig = filepath.Join(s.dir, "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// kubeconfigBytes is a kubeconfig for cfg with the CA and client credentials embedded.
func kubeconfigBytes(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kscompat"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["kscompat"] = &clientcmdapi.Context{Cluster: "kscompat", AuthInfo: "admin"}
	kc.CurrentContext = "kscompat"
	return clientcmd.Write(*kc)
}

// registerControlPlanes creates the Secret with the kubeconfig and the ControlPlanes wds1 and
// its1 (spec.type host), whose status, set through /status, points at that Secret: what
// `kflex create --type host` leaves behind.
func (s *space) registerControlPlanes(kubeconfig []byte) {
	ctx := context.Background()
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeconfigNamespace}})
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "host-kubeconfig", Namespace: kubeconfigNamespace},
		Data: map[string][]byte{"kubeconfig": kubeconfig, "kubeconfig-incluster": kubeconfig}})
	for name, cptype := range map[string]string{wdsName: "wds", itsName: "its"} {
		cp := &kfv1alpha1.ControlPlane{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kflex.kubestellar.io/cptype": cptype}},
			Spec:       kfv1alpha1.ControlPlaneSpec{Type: kfv1alpha1.ControlPlaneTypeHost},
		}
		s.create(cp)
		cp.Status = kfv1alpha1.ControlPlaneStatus{
			Conditions: []kfv1alpha1.ControlPlaneCondition{},
			SecretRef: &kfv1alpha1.SecretReference{Namespace: kubeconfigNamespace, Name: "host-kubeconfig",
				Key: "kubeconfig", InClusterKey: "kubeconfig-incluster"},
		}
		if err := s.c.Status().Update(ctx, cp); err != nil {
			s.t.Fatalf("setting the status of ControlPlane %s: %v", name, err)
		}
	}
}

func (s *space) create(obj client.Object) {
	s.t.Helper()
	if err := s.c.Create(context.Background(), obj); err != nil {
		s.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// eventually polls cond every 100 ms until it returns true or the timeout passes, failing the test
// with the last reason cond gave.
func (s *space) eventually(what string, timeout time.Duration, procs []*process, cond func(ctx context.Context) (bool, string)) {
	s.t.Helper()
	var reason string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			for _, p := range procs {
				if p.exited() {
					return false, fmt.Errorf("%s exited: %v", p.name, p.cmd.ProcessState)
				}
			}
			// The condition gets a context of its own, so that the poll's deadline does not
			// replace the last real reason with "context deadline exceeded".
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var ok bool
			ok, reason = cond(cctx)
			return ok, nil
		})
	if err != nil {
		s.t.Fatalf("%s: %v (last state: %s)", what, err, reason)
	}
}

// get reads an object, treating "not found" as (false, nil).
func (s *space) get(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	err := s.c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

var errNotYet = errors.New("not yet")

func itoa(i int) string { return strconv.Itoa(i) }

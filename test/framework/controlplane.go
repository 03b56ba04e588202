package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	sfscheme "github.com/statusfold/statusfold/api/scheme"
)

// K8sVersion is the version of the control-plane binaries the tests run against.
const K8sVersion = "v1.37.2"

// ControlPlane is a running kube-apiserver + etcd with statusfold's CRDs installed.
type ControlPlane struct {
	Env        *envtest.Environment
	Config     *rest.Config
	Scheme     *k8sruntime.Scheme
	Client     client.Client
	Dynamic    dynamic.Interface
	Discovery  discovery.DiscoveryInterface
	RESTMapper meta.RESTMapper
	// Kubeconfig is the path of a kubeconfig file for an admin user of this control plane.
	Kubeconfig string
	// KubectlPath is the kubectl built for the same Kubernetes version.
	KubectlPath string
}

type options struct {
	webhooks  *envtest.WebhookInstallOptions
	extraCRDs []string
	apiFlags  map[string]string
	noCRDs    bool
	gcTrace   io.Writer
}

// Option configures RunControlPlane.
type Option func(*options)

// WithWebhooks registers webhook configurations with the apiserver; envtest generates a serving
// certificate into opts.LocalServingCertDir and points the configurations at LocalServingHost:Port.
func WithWebhooks(opts envtest.WebhookInstallOptions) Option {
	return func(o *options) { o.webhooks = &opts }
}

// WithExtraCRDs installs CRDs from more files or folders.
func WithExtraCRDs(paths ...string) Option {
	return func(o *options) { o.extraCRDs = append(o.extraCRDs, paths...) }
}

// WithoutCRDs starts the control plane without statusfold's CRDs (e.g. for a Helm install that
// brings them). The client's RESTMapper is dynamic, so it finds them once installed.
func WithoutCRDs() Option {
	return func(o *options) { o.noCRDs = true }
}

// WithAPIServerFlag sets one kube-apiserver flag.
func WithAPIServerFlag(name, value string) Option {
	return func(o *options) {
		if o.apiFlags == nil {
			o.apiFlags = map[string]string{}
		}
		o.apiFlags[name] = value
	}
}

// WithAPIServerGCTrace runs the kube-apiserver with GODEBUG=gctrace=1 and writes its standard
// error to w: the apiserver's log, and the Go runtime's line per garbage collection (for
// measurements: test/load's -load.apiserver-gctrace). The variable is set in this process's
// environment while the control plane starts, which its processes inherit (etcd too; its output
// is discarded); this process's own runtime reads GODEBUG's gctrace at its start only.
func WithAPIServerGCTrace(w io.Writer) Option {
	return func(o *options) { o.gcTrace = w }
}

// RepoRoot is the root folder of the statusfold repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// CRDPaths are the folders holding every CRD statusfold installs.
func CRDPaths() []string {
	root := RepoRoot()
	return []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "config", "crd", "external")}
}

// AssetsDir is where the control-plane binaries are: $KUBEBUILDER_ASSETS, else the cache folder
// that `make envtest-assets` fills.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "statusfold", "k8s", K8sVersion)
}

// RequireIntegration skips the test under `go test -short` and fails it, with the command to run,
// when the control-plane binaries are missing.
func RequireIntegration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a control plane (not run with -short)")
	}
	dir := AssetsDir()
	for _, b := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("control-plane binary %s missing in %s: run `make envtest-assets` (or set KUBEBUILDER_ASSETS)", b, dir)
		}
	}
}

// RunControlPlane starts a control plane for the test and stops it when the test ends.
func RunControlPlane(t testing.TB, opts ...Option) *ControlPlane {
	t.Helper()
	RequireIntegration(t)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	crds := append(CRDPaths(), o.extraCRDs...)
	if o.noCRDs {
		crds = o.extraCRDs
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: AssetsDir(),
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                sfscheme.New(),
	}
	if o.webhooks != nil {
		env.WebhookInstallOptions = *o.webhooks
	}
	env.ControlPlane.GetAPIServer().Configure().Set("profiling", "false")
	for k, v := range o.apiFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(k, v)
	}
	if o.gcTrace != nil {
		env.ControlPlane.GetAPIServer().Err = o.gcTrace
		old, had := os.LookupEnv("GODEBUG")
		godebug := "gctrace=1"
		if had && old != "" {
			godebug = old + ",gctrace=1"
		}
		os.Setenv("GODEBUG", godebug)
		defer func() {
			if had {
				os.Setenv("GODEBUG", old)
			} else {
				os.Unsetenv("GODEBUG")
			}
		}()
	}
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
	cp, err := newControlPlane(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(cfg, kc); err != nil {
		t.Fatal(err)
	}
	cp.Kubeconfig = kc
	return cp
}

func newControlPlane(env *envtest.Environment, cfg *rest.Config) (*ControlPlane, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{
		Env: env, Config: cfg, Scheme: env.Scheme, Client: c, Dynamic: dyn, Discovery: disc,
		RESTMapper: mapper, KubectlPath: filepath.Join(AssetsDir(), "kubectl"),
	}, nil
}

// Kubectl runs the matching kubectl against the control plane and returns stdout, stderr and the
// error (an *exec.ExitError when kubectl exits non-zero).
func (cp *ControlPlane) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && errb.Len() == 0 {
		err = fmt.Errorf("kubectl %v: %w", args, err)
	}
	return out.String(), errb.String(), err
}

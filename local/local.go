package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	sfscheme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/config"
)

// K8sVersion is the version of the control-plane binaries statusfold local runs (the same the
// tests use).
const K8sVersion = "v1.37.2"

// DefaultAssetsDir is where the control-plane binaries are: $KUBEBUILDER_ASSETS, else
// ~/.cache/statusfold/k8s/<K8sVersion> (what `make envtest-assets` fills).
func DefaultAssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "statusfold", "k8s", K8sVersion)
}

// ControlPlaneOptions configures StartControlPlane.
type ControlPlaneOptions struct {
	// AssetsDir holds kube-apiserver, etcd and kubectl (default DefaultAssetsDir()).
	AssetsDir string
	// DataDir keeps etcd's data and the kubeconfig between runs; "" uses a temporary folder that
	// Stop removes.
	DataDir string
	// Webhooks, when set, are registered with the apiserver by envtest (it generates the serving
	// certificate into Webhooks.LocalServingCertDir).
	Webhooks *envtest.WebhookInstallOptions
	// Out receives progress lines (nil: discarded).
	Out io.Writer
}

// ControlPlane is a running local kube-apiserver and etcd with statusfold's CRDs installed.
type ControlPlane struct {
	Config     *rest.Config
	Client     client.Client
	RESTMapper meta.RESTMapper
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// KubectlPath is the kubectl of the same version.
	KubectlPath string
	// DataDir is where state lives (the temporary folder when none was asked for).
	DataDir string
	// Webhooks is what envtest made of ControlPlaneOptions.Webhooks: LocalServingHost,
	// LocalServingPort and LocalServingCertDir are where the webhook server must listen.
	Webhooks envtest.WebhookInstallOptions

	env     *envtest.Environment
	tempDir bool
}

// CRDs decodes the CustomResourceDefinitions embedded in the binary (config/crd).
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, pattern := range []string{"crd/bases/*.yaml", "crd/external/*.yaml"} {
		files, err := fs.Glob(config.CRDs, pattern)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := fs.ReadFile(config.CRDs, f)
			if err != nil {
				return nil, err
			}
			docs, err := splitYAML(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, doc := range docs {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.Unmarshal(doc, crd); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				if crd.Kind == "CustomResourceDefinition" {
					out = append(out, crd)
				}
			}
		}
	}
	return out, nil
}

// splitYAML reads a multi-document YAML stream with apimachinery's YAML reader (the one
// `statusfold validate` uses) and returns each document converted to JSON; empty and
// comment-only documents are dropped.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		out = append(out, js)
	}
}

// EnsureAssets checks that the control-plane binaries are in dir; when they are missing it runs
// hack/envtest-assets.sh (found by walking up from the working directory, i.e. in a checkout of
// the repository) and streams its progress to out.
func EnsureAssets(ctx context.Context, dir string, out io.Writer) error {
	if assetsPresent(dir) {
		return nil
	}
	script, err := findScript()
	if err != nil {
		return fmt.Errorf("control-plane binaries missing in %s and %w; run `make envtest-assets` in a statusfold checkout, or set KUBEBUILDER_ASSETS", dir, err)
	}
	fmt.Fprintf(out, "Building kube-apiserver, etcd and kubectl %s into %s (first run only; about 9 minutes on 2 cores)…\n", K8sVersion, dir)
	cmd := exec.CommandContext(ctx, "bash", script, dir)
	cmd.Env = append(os.Environ(), "K8S_VERSION="+K8sVersion)
	cmd.Stdout, cmd.Stderr = io.Discard, out
	stop := Progress(out, "building the control-plane binaries")
	err = cmd.Run()
	stop(err == nil)
	if err != nil {
		return fmt.Errorf("building control-plane binaries: %w", err)
	}
	if !assetsPresent(dir) {
		return fmt.Errorf("building control-plane binaries: %s still lacks kube-apiserver, etcd or kubectl", dir)
	}
	return nil
}

func assetsPresent(dir string) bool {
	for _, b := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func findScript() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "hack", "envtest-assets.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("hack/envtest-assets.sh is not in the working directory or above it")
		}
	}
}

// StartControlPlane starts etcd and kube-apiserver from the binaries in opts.AssetsDir,
// installs the embedded CRDs, and writes an admin kubeconfig into the data folder. Stop it with
// Stop, which waits until both processes have exited.
func StartControlPlane(ctx context.Context, opts ControlPlaneOptions) (*ControlPlane, error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	assets := opts.AssetsDir
	if assets == "" {
		assets = DefaultAssetsDir()
	}
	if err := EnsureAssets(ctx, assets, out); err != nil {
		return nil, err
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{DataDir: opts.DataDir, KubectlPath: filepath.Join(assets, "kubectl")}
	if cp.DataDir == "" {
		cp.DataDir, err = os.MkdirTemp("", "statusfold-local-")
		if err != nil {
			return nil, err
		}
		cp.tempDir = true
	} else if err := os.MkdirAll(cp.DataDir, 0o700); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:   assets,
		CRDs:                    crds,
		Scheme:                  sfscheme.New(),
		ControlPlaneStopTimeout: 30 * time.Second,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(cp.DataDir, "etcd")}
	if err := os.MkdirAll(env.ControlPlane.Etcd.DataDir, 0o700); err != nil {
		return nil, err
	}
	// kube-apiserver 1.37 exits when --advertise-address is a loopback address: envtest leaves
	// it unset, and so do we.
	env.ControlPlane.GetAPIServer().Configure().Set("profiling", "false")
	if opts.Webhooks != nil {
		env.WebhookInstallOptions = *opts.Webhooks
	}
	cp.env = env
	stop := Progress(out, "starting etcd and kube-apiserver "+K8sVersion)
	cfg, err := env.Start()
	stop(err == nil)
	if err != nil {
		_ = env.Stop()
		cp.cleanup()
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cp.Config = cfg
	cp.Webhooks = env.WebhookInstallOptions
	if err := cp.finish(); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) finish() error {
	httpClient, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return err
	}
	if cp.RESTMapper, err = apiutil.NewDynamicRESTMapper(cp.Config, httpClient); err != nil {
		return err
	}
	if cp.Client, err = client.New(cp.Config, client.Options{Scheme: cp.env.Scheme, Mapper: cp.RESTMapper}); err != nil {
		return err
	}
	user, err := cp.env.AddUser(envtest.User{Name: "statusfold-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(cp.DataDir, "kubeconfig")
	return os.WriteFile(cp.Kubeconfig, kc, 0o600)
}

// Stop stops kube-apiserver and etcd, waits for them to exit, and removes the temporary data
// folder (a --data-dir is kept, except its kubeconfig, whose certificates die with this run).
func (cp *ControlPlane) Stop() error {
	err := cp.env.Stop()
	cp.cleanup()
	return err
}

func (cp *ControlPlane) cleanup() {
	if cp.tempDir {
		_ = os.RemoveAll(cp.DataDir)
		return
	}
	if cp.Kubeconfig != "" {
		_ = os.Remove(cp.Kubeconfig)
	}
}

// APIServerURL is the apiserver's address, e.g. https://127.0.0.1:37421.
func (cp *ControlPlane) APIServerURL() string { return strings.TrimSuffix(cp.Config.Host, "/") }

package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// HelmVersion is the Helm release the chart is tested with (`make helm` builds it).
const HelmVersion = "v3.22.0"

// HelmPath is the helm binary: $HELM, else the one `make helm` builds into bin/tools. It fails
// the test, with the command to run, when it is missing.
func HelmPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("HELM")
	if p == "" {
		p = filepath.Join(RepoRoot(), "bin", "tools", "helm-"+HelmVersion, "helm")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("helm %s missing (%v): run `make helm` (or set HELM)", HelmVersion, err)
	}
	return p
}

// ChartDir is the folder of statusfold's Helm chart.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "statusfold") }

// Helm runs helm with args (and, when kubeconfig is not empty, against that cluster), with its
// caches and configuration in the test's temporary folder. It returns stdout, and an error
// holding stderr when helm fails.
func Helm(ctx context.Context, t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := HelmOutput(ctx, t, kubeconfig, args...)
	if err != nil {
		return out, fmt.Errorf("helm %v: %w: %s", args, err, errOut)
	}
	return out, nil
}

// HelmOutput is Helm returning stderr too (where Helm prints the apiserver's warnings).
func HelmOutput(ctx context.Context, t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if kubeconfig != "" {
		args = append([]string{"--kubeconfig", kubeconfig}, args...)
	}
	cmd := exec.CommandContext(ctx, HelmPath(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kubeconfig file sets no QPS: restConfig must turn client-side rate limiting off, as
// ctrl.GetConfig does, instead of leaving client-go's 5 requests/s.
func TestRestConfigFromFileIsNotThrottled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: abc}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("Host = %q, want https://127.0.0.1:6443", cfg.Host)
	}
	if cfg.QPS != -1 {
		t.Errorf("QPS = %v, want -1 (no client-side rate limiting)", cfg.QPS)
	}
	if _, err := restConfig(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("restConfig of a missing file: want an error")
	}
}

func TestManagerPprofFlagDefaultsOff(t *testing.T) {
	f := newManagerCommand().Flags().Lookup("pprof-bind-address")
	if f == nil {
		t.Fatal("no --pprof-bind-address flag")
	}
	if f.DefValue != "" {
		t.Errorf("--pprof-bind-address default = %q, want off (empty)", f.DefValue)
	}
}

func TestManagerRejectsNonPositiveTimeBudget(t *testing.T) {
	for _, v := range []string{"0s", "-1s"} {
		cmd := newManagerCommand()
		cmd.SetArgs([]string{"--collector-time-budget=" + v, "--wds-kubeconfig", filepath.Join(t.TempDir(), "unused")})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--collector-time-budget") {
			t.Errorf("--collector-time-budget=%s: error %v, want one that names the flag", v, err)
		}
	}
}

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/statusfold/statusfold/aggregator"
)

// A kubeconfig file sets no QPS: restConfig must turn client-side rate limiting off, as
// ctrl.GetConfig does, instead of leaving client-go's 5 requests/s.
func TestRestConfigFromFileIsNotThrottled(t *testing.T) {
	path := writeKubeconfig(t)
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

// writeKubeconfig writes a kubeconfig for an apiserver at https://127.0.0.1:6443 that nothing
// contacts, and returns its path.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
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
	return path
}

// managerConfig runs `statusfold manager args…` up to the point where it would start the manager,
// and returns the Config it would start it with.
func managerConfig(t *testing.T, args ...string) aggregator.Config {
	t.Helper()
	var got *aggregator.Config
	cmd := newManagerCommand(func(_ context.Context, cfg aggregator.Config) error {
		got = &cfg
		return nil
	})
	cmd.SetArgs(append([]string{"--wds-kubeconfig", writeKubeconfig(t), "--webhooks=false"}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("manager %v: %v", args, err)
	}
	if got == nil {
		t.Fatalf("manager %v: the manager was not run", args)
	}
	return *got
}

// The profiler is off unless asked for: the Config the manager is started with has no pprof
// address (controller-runtime then serves no /debug/pprof/), and the flag, when given, reaches it.
func TestManagerPprofFlagDefaultsOff(t *testing.T) {
	if addr := managerConfig(t).PprofAddr; addr != "" {
		t.Errorf("without --pprof-bind-address the manager serves the profiler at %q, want off (empty)", addr)
	}
	if addr := managerConfig(t, "--pprof-bind-address=127.0.0.1:6060").PprofAddr; addr != "127.0.0.1:6060" {
		t.Errorf("--pprof-bind-address=127.0.0.1:6060: manager started with PprofAddr %q", addr)
	}
}

func TestManagerRejectsNonPositiveTimeBudget(t *testing.T) {
	for _, v := range []string{"0s", "-1s"} {
		cmd := newManagerCommand(aggregator.Run)
		cmd.SetArgs([]string{"--collector-time-budget=" + v, "--wds-kubeconfig", filepath.Join(t.TempDir(), "unused")})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--collector-time-budget") {
			t.Errorf("--collector-time-budget=%s: error %v, want one that names the flag", v, err)
		}
	}
}

// --max-write-delay reaches the Config: 1 s by default, 0 turns pacing off (aggregator.PacingOff,
// not Options' zero value, which means the default), and a negative value is refused.
func TestManagerMaxWriteDelayFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, aggregator.DefaultMaxWriteDelay},
		{[]string{"--max-write-delay=250ms"}, 250 * time.Millisecond},
		{[]string{"--max-write-delay=0"}, aggregator.PacingOff},
	} {
		if got := managerConfig(t, tc.args...).MaxWriteDelay; got != tc.want {
			t.Errorf("manager %v: MaxWriteDelay %s, want %s", tc.args, got, tc.want)
		}
	}
	if err := managerError(t, "--max-write-delay=-1s"); err == nil || !strings.Contains(err.Error(), "--max-write-delay") {
		t.Errorf("--max-write-delay=-1s: error %v, want one that names the flag", err)
	}
}

// --size-budget reaches the Config (1 MiB by default), and a budget below the floor is refused
// with an error that names the flag.
func TestManagerSizeBudgetFlag(t *testing.T) {
	if b := managerConfig(t).SizeBudget; b != aggregator.DefaultSizeBudget {
		t.Errorf("default --size-budget: Config.SizeBudget %d, want %d", b, aggregator.DefaultSizeBudget)
	}
	if b := managerConfig(t, "--size-budget=524288").SizeBudget; b != 524288 {
		t.Errorf("--size-budget=524288: Config.SizeBudget %d", b)
	}
	for _, v := range []string{"0", "1000", "-1"} {
		cmd := newManagerCommand(aggregator.Run)
		cmd.SetArgs([]string{"--size-budget=" + v, "--wds-kubeconfig", filepath.Join(t.TempDir(), "unused")})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--size-budget") {
			t.Errorf("--size-budget=%s: error %v, want one that names the flag", v, err)
		}
	}
}

// --max-reported-status-bytes and --object-time-budget reach the Config: the cap 256 KiB by
// default, 0 turns it off (aggregator.NoStatusCap, not Options' zero value, which means the
// default); a negative cap and a budget that is not positive are refused with the flag's name.
func TestManagerStatusCapFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		cap    int
		budget time.Duration
	}{
		{nil, aggregator.DefaultMaxReportedStatusBytes, aggregator.DefaultObjectTimeBudget},
		{[]string{"--max-reported-status-bytes=1000", "--object-time-budget=1s"}, 1000, time.Second},
		{[]string{"--max-reported-status-bytes=0"}, aggregator.NoStatusCap, aggregator.DefaultObjectTimeBudget},
	} {
		cfg := managerConfig(t, tc.args...)
		if cfg.MaxReportedStatusBytes != tc.cap || cfg.ObjectTimeBudget != tc.budget {
			t.Errorf("manager %v: cap %d, budget %s; want %d, %s", tc.args, cfg.MaxReportedStatusBytes, cfg.ObjectTimeBudget, tc.cap, tc.budget)
		}
	}
	for _, bad := range []string{"--max-reported-status-bytes=-1", "--object-time-budget=0s"} {
		if err := managerError(t, bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: error %v, want one that names the flag", bad, err)
		}
	}
}

// --workload-watch-timeout reaches the Config, 1 minute by default; under 10s it is refused
// with the flag's name.
func TestManagerWorkloadWatchTimeout(t *testing.T) {
	if got := managerConfig(t).WorkloadWatchTimeout; got != aggregator.DefaultWorkloadWatchTimeout {
		t.Errorf("default %s, want %s", got, aggregator.DefaultWorkloadWatchTimeout)
	}
	if got := managerConfig(t, "--workload-watch-timeout=5m").WorkloadWatchTimeout; got != 5*time.Minute {
		t.Errorf("--workload-watch-timeout=5m: %s", got)
	}
	if err := managerError(t, "--workload-watch-timeout=9s"); err == nil || !strings.Contains(err.Error(), "--workload-watch-timeout 9s: must be at least 10s") {
		t.Errorf("--workload-watch-timeout=9s: error %v, want one that names the flag", err)
	}
}

// managerError is the error of `statusfold manager` run with args (and a WDS kubeconfig, no
// webhooks), before it would start.
func managerError(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newManagerCommand(func(context.Context, aggregator.Config) error { return nil })
	cmd.SetArgs(append([]string{"--wds-kubeconfig", writeKubeconfig(t), "--webhooks=false"}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

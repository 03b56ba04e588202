package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/test/framework"
)

// TestRunServesProbesMetricsAndLeads runs the reconciler the way `statusfold manager` does
// (aggregator.Run: leader election, probes, metrics) and checks the operational surface.
func TestRunServesProbesMetricsAndLeads(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	ensureNamespace(t, c, "statusfold-system")
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	create(t, c, kubestellarDocCollectors()...)
	addrs := framework.FreeAddrs(t, 2)
	metricsAddr, probeAddr := addrs[0], addrs[1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- aggregator.Run(ctx, aggregator.Config{
			Options:                 aggregator.Options{WDSName: wdsName},
			WDS:                     cp.Config,
			MetricsAddr:             metricsAddr,
			ProbeAddr:               probeAddr,
			LeaderElection:          true,
			LeaderElectionNamespace: "statusfold-system",
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, "probe "+path, func() error { _, err := httpGet("http://" + probeAddr + path); return err })
	}
	eventually(t, "leader Lease", func() error {
		var lease coordinationv1.Lease
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "statusfold-system", Name: aggregator.DefaultLeaderElectionID}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	// The leader reconciles: a policy with a collector gets its CombinedStatus.
	ns := "run"
	d := deployment(t, c, ns, "web", 1, nil)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-wecs"))))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(1, 1, 1), applied(1))
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"1"}})
	eventually(t, "metrics", func() error {
		body, err := httpGet("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		for _, m := range []string{"statusfold_evaluations_total", "statusfold_writes_total", "statusfold_workstatus_to_write_seconds",
			"statusfold_combinedstatus_rows", `workqueue_depth{controller="statusfold_objects"`} {
			if !strings.Contains(body, m) {
				return fmt.Errorf("no %s in /metrics", m)
			}
		}
		return nil
	})
}

func httpGet(url string) (string, error) {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

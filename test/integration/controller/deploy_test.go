package controller

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

var errStillThere = errors.New("still there")

// TestManifestsServerDryRun builds config/default (and its cert-manager variant) with kustomize
// and has the apiserver validate every object with a server-side dry run.
func TestManifestsServerDryRun(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ensureNamespace(t, cp.Client, "statusfold-system") // a dry run creates no namespace
	ctx := context.Background()
	root := framework.RepoRoot()
	for _, dir := range []string{"config/default", "config/default/cert-manager"} {
		out, errOut, err := cp.Kubectl(ctx, nil, "kustomize", filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("kustomize %s: %v: %s", dir, err, errOut)
		}
		if dir != "config/default" {
			continue // cert-manager's kinds are not installed here: the build is the check
		}
		got, errOut, err := cp.Kubectl(ctx, []byte(out), "apply", "--dry-run=server", "-f", "-")
		if err != nil {
			t.Fatalf("apply --dry-run=server %s: %v: %s", dir, err, errOut)
		}
		for _, kind := range []string{"deployment.apps/statusfold-manager", "clusterrole.rbac.authorization.k8s.io/statusfold-manager",
			"poddisruptionbudget.policy/statusfold-manager", "validatingwebhookconfiguration.admissionregistration.k8s.io/"} {
			if !strings.Contains(got, kind) {
				t.Errorf("dry run of %s did not include %s:\n%s", dir, kind, got)
			}
		}
	}
}

// TestExternalBindingResolution: with --binding-resolution=external statusfold writes no Binding
// but acts on the Bindings another controller writes.
func TestExternalBindingResolution(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	create(t, c, seedCollectors()...)
	ns := "external"
	d := deployment(t, c, ns, "web", 3, nil)
	bp := policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton, collectors("count-wecs")))
	create(t, c, bp)
	startManager(t, cp, aggregator.Options{BindingResolution: aggregator.BindingResolutionExternal})
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	// No Binding yet: nothing happens (a wait that must time out would be a timing assertion, so
	// the Binding written below is what the rest checks).
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	b.Spec.Destinations = []controlv1alpha1.Destination{{ClusterId: "wec1"}}
	entry := controlv1alpha1.NamespaceScopeDownsyncClause{}
	entry.Group, entry.Version, entry.Resource, entry.Namespace, entry.Name = "apps", "v1", "deployments", ns, "web"
	entry.StatusCollectors = []string{"count-wecs"}
	entry.WantSingletonReportedState = true
	b.Spec.Workload.NamespaceScope = []controlv1alpha1.NamespaceScopeDownsyncClause{entry}
	create(t, c, b)
	expectReturn(t, c, d, "1", 2)
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"1"}})
}

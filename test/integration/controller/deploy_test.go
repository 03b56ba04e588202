package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			continue // cert-manager's kinds are not installed in this test's control plane: the build is the check
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
	create(t, c, kubestellarDocCollectors()...)
	ns := "external"
	d := deployment(t, c, ns, "web", 3, nil)
	bp := policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton, collectors("count-wecs")))
	create(t, c, bp)
	startManager(t, cp, aggregator.Options{BindingResolution: aggregator.BindingResolutionExternal})
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	// The policy has been reconciled (its condition is written in both modes), and no Binding
	// was written for it.
	eventually(t, "the BindingPolicy reconciled", func() error {
		var p controlv1alpha1.BindingPolicy
		if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &p); err != nil {
			return err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == controlv1alpha1.ConditionStatusCollectorsAvailable {
				return nil
			}
		}
		return fmt.Errorf("no %s condition", controlv1alpha1.ConditionStatusCollectorsAvailable)
	})
	var none controlv1alpha1.BindingList
	if err := c.List(context.Background(), &none); err != nil || len(none.Items) > 0 {
		t.Fatalf("Bindings in external mode before anyone else wrote one: %d (%v)", len(none.Items), err)
	}
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
	// statusfold wrote at most the Binding's status (its condition), never its spec.
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	for _, mf := range b.ManagedFields {
		if mf.Manager == aggregator.FieldManager && mf.Subresource != "status" {
			t.Errorf("statusfold owns fields of the Binding's %q: %s", mf.Subresource, mf.FieldsV1.String())
		}
	}
}

package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

func customObject(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	ensureNamespace(t, c, ns)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"size": int64(1)}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func customRef(gvk schema.GroupVersionKind, resource string, u *unstructured.Unstructured) controlv1alpha1.SourceRef {
	return controlv1alpha1.SourceRef{Group: gvk.Group, Version: gvk.Version, Resource: resource, Kind: gvk.Kind,
		Namespace: u.GetNamespace(), Name: u.GetName()}
}

var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gaugeGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gauge"}
)

func testCRDs() string {
	return filepath.Join(framework.RepoRoot(), "test", "integration", "controller", "testdata")
}

// expectStatus waits until the object's .status, read from the apiserver, satisfies check.
func expectStatus(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string, check func(status map[string]any) error) {
	t.Helper()
	eventually(t, fmt.Sprintf("status of %s %s/%s", gvk.Kind, ns, name), func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		return check(status)
	})
}

// TestSchemaSkew: a WEC reports status fields that the WDS's schema of the kind lacks (as a WEC
// running a newer Kubernetes does). The returned status is written without them, an Event on
// the workload object and a metric say what was dropped; a kind whose status preserves unknown
// fields gets everything.
func TestSchemaSkew(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(testCRDs()))
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	startManager(t, cp, aggregator.Options{})
	const ns = "skew"

	t.Run("Deployment", func(t *testing.T) {
		before := counter(t, "statusfold_status_fields_dropped_total", "reason", "schema")
		d := deployment(t, c, ns, "web", 3, nil)
		create(t, c, policy("skew-deployment", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
		st := deploymentStatus(3, 2, 1)
		st["extra"] = map[string]any{"a": int64(1)}
		report(t, c, "wec1", deploymentRef(d), st, applied(1))
		got := expectReturn(t, c, d, "1", 2)
		if got.observedGen != 1 {
			t.Errorf("observedGeneration = %d, want 1", got.observedGen)
		}
		u, err := getObject(c, d, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "extra"); found {
			t.Errorf("status.extra written: %v", u.Object["status"])
		}
		expectEvent(t, c, ns, "web", "StatusFieldsDropped", ".status.extra")
		if after := counter(t, "statusfold_status_fields_dropped_total", "reason", "schema"); after < before+1 {
			t.Errorf("statusfold_status_fields_dropped_total{reason=schema} went from %v to %v, want at least +1", before, after)
		}
	})

	t.Run("PreserveUnknownFieldsCRD", func(t *testing.T) {
		w := customObject(t, c, widgetGVK, ns, "w1")
		create(t, c, policy("skew-widget", []string{"wec1"}, clause("example.com", "widgets", ns, []string{"w1"}, singleton)))
		report(t, c, "wec1", customRef(widgetGVK, "widgets", w),
			map[string]any{"phase": "Ready", "extra": map[string]any{"a": int64(1)}}, applied(1))
		expectStatus(t, c, widgetGVK, ns, "w1", func(status map[string]any) error {
			if status["phase"] != "Ready" || fmt.Sprint(status["extra"]) != "map[a:1]" {
				return fmt.Errorf("status %v, want phase Ready and extra {a: 1}", status)
			}
			return nil
		})
		if evs, err := events(c, ns, "w1", "StatusFieldsDropped"); err != nil || len(evs) > 0 {
			t.Errorf("StatusFieldsDropped events for a kind that preserves unknown fields: %+v (%v)", evs, err)
		}
	})

	t.Run("DeclaredStatusCRD", func(t *testing.T) {
		g := customObject(t, c, gaugeGVK, ns, "g1")
		create(t, c, policy("skew-gauge", []string{"wec1"}, clause("example.com", "gauges", ns, []string{"g1"}, singleton)))
		report(t, c, "wec1", customRef(gaugeGVK, "gauges", g),
			map[string]any{"phase": "Ready", "level": int64(4), "extra": map[string]any{"a": int64(1)}}, applied(1))
		expectStatus(t, c, gaugeGVK, ns, "g1", func(status map[string]any) error {
			if status["phase"] != "Ready" || fmt.Sprint(status["level"]) != "4" {
				return fmt.Errorf("status %v, want phase Ready and level 4", status)
			}
			if _, ok := status["extra"]; ok {
				return fmt.Errorf("status %v has extra", status)
			}
			return nil
		})
		expectEvent(t, c, ns, "g1", "StatusFieldsDropped", ".status.extra")
	})
}

package controller

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestLongKeys: what statusfold computes never holds a map key longer than an apply body may
// hold (1,022 characters), which the apiserver would refuse on every write (docs/rules.md
// "Reported status size"), even when it is built from reported values that are fine on their own.
func TestLongKeys(t *testing.T) {
	// Only the Widget CRD: testdata also holds an older CombinedStatus CRD, without rowErrors.
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(filepath.Join(testCRDs(), "widgets.example.com.yaml")))
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	addCluster(t, c, "wec2", map[string]string{"name": "wec2"})
	_, stop := startManager(t, cp, aggregator.Options{})
	defer stop()
	t.Run("CollectorCell", func(t *testing.T) { testLongKeyCell(t, c) })
	t.Run("ReturnedStatus", func(t *testing.T) { testLongKeyReturned(t, c) })
}

// testLongKeyCell: a select builds a map whose key is 1,023 characters: that cell is Null with a
// row error on its column, and the CombinedStatus is written.
func testLongKeyCell(t *testing.T, c client.Client) {
	const ns = "long-key"
	d := deployment(t, c, ns, "web", 1, nil)
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "long-key"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "keyed", Def: "{'k' + returned.status.label: 1}"}}}}
	create(t, c, sc, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("long-key"))))
	status := deploymentStatus(1, 1, 1)
	status["label"] = strings.Repeat("x", 1022)
	report(t, c, "wec1", deploymentRef(d), status, applied(1))
	const want = "a map key of 1023 characters; an apply body takes keys of at most 1022 characters"
	// Before the report is evaluated, the row is there too (returned.status is null): wait for
	// the row error.
	eventually(t, "CombinedStatus with the long key's row error", func() error {
		cs, err := combinedStatus(c, d, ns, ns)
		if err != nil {
			return err
		}
		r, err := result(cs, "long-key")
		if err != nil {
			return err
		}
		if got := cells(r); len(got) != 1 || !slices.Equal(got[0], []string{"wec1", "null"}) {
			return fmt.Errorf("cells %v", got)
		}
		if len(r.RowErrors) != 1 || r.RowErrors[0].ColumnName != "keyed" || r.RowErrors[0].Error != want {
			return fmt.Errorf("row errors %+v, want one in column keyed: %q", r.RowErrors, want)
		}
		return nil
	})
}

// testLongKeyReturned: an AggregationPolicy's Rego makes a key of each WEC's label; when one is
// 1,023 characters, the object gets an AggregationFailed Event and keeps its previous status.
func testLongKeyReturned(t *testing.T, c client.Client) {
	const ns = "long-key-return"
	ensureNamespace(t, c, ns)
	w := customObject(t, c, widgetGVK, ns, "w")
	ap := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "widgets-keyed"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "example.com", Kind: "Widget"},
			Rego: "package statusfold.user.widgets\n\n" +
				"status := {\"byLabel\": {concat(\"\", [\"k\", w.status.label]): 1 | some w in input.wecs}}\n"}}
	create(t, c, ap, policy(ns, []string{"wec1", "wec2"}, clause("example.com", "widgets", ns, []string{"w"}, multi)))
	ref := customRef(widgetGVK, "widgets", w)
	report(t, c, "wec1", ref, map[string]any{"label": "a"}, applied(1))
	report(t, c, "wec2", ref, map[string]any{"label": "b"}, applied(1))
	byLabel := func(u *unstructured.Unstructured) error {
		m, _, _ := unstructured.NestedMap(u.Object, "status", "byLabel")
		if len(m) != 2 || m["ka"] == nil || m["kb"] == nil {
			return fmt.Errorf("status %v", u.Object["status"])
		}
		return nil
	}
	expectObject(t, c, ns, "w", byLabel)
	report(t, c, "wec2", ref, map[string]any{"label": strings.Repeat("x", 1022)}, applied(1))
	expectEvent(t, c, ns, "w", "AggregationFailed", "a map key of 1023 characters; an apply body takes keys of at most 1022 characters")
	expectObject(t, c, ns, "w", byLabel)
}

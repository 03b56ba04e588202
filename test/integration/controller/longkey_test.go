package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestLongKeyCell: a collector whose select builds a map with a key longer than an apply body
// may hold (1,023 characters, from a reported string value that is itself fine) gets a row error
// for that cell, and the CombinedStatus is written; the apiserver would refuse the map forever
// (docs/rules.md "Reported status size").
func TestLongKeyCell(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	_, stop := startManager(t, cp, aggregator.Options{})
	defer stop()
	const ns = "long-key"
	d := deployment(t, c, ns, "web", 1, nil)
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "long-key"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "keyed", Def: "{'k' + returned.status.label: 1}"}}}}
	create(t, c, sc, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("long-key"))))
	status := deploymentStatus(1, 1, 1)
	status["label"] = strings.Repeat("x", 1022)
	report(t, c, "wec1", deploymentRef(d), status, applied(1))
	cs := expectResult(t, c, d, ns, ns, "long-key", [][]string{{"wec1", "null"}})
	r, _ := result(cs, "long-key")
	const want = "a map key of 1023 characters; an apply body takes keys of at most 1022 characters"
	if len(r.RowErrors) != 1 || r.RowErrors[0].ColumnName != "keyed" || r.RowErrors[0].Error != want {
		t.Fatalf("row errors %+v, want one in column keyed: %q", r.RowErrors, want)
	}
}

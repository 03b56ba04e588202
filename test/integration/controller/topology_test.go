package controller

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestSeparateITS runs with the WDS and the ITS on two apiservers: inventory and WorkStatuses
// are read from the ITS, everything is written to the WDS, and WorkStatuses of another WDS are
// ignored.
func TestSeparateITS(t *testing.T) {
	wds := framework.RunControlPlane(t)
	its := framework.RunControlPlane(t)
	addCluster(t, its.Client, "wec1", map[string]string{"name": "wec1"})
	addCluster(t, its.Client, "wec2", map[string]string{"name": "wec2"})
	create(t, wds.Client, kubestellarDocCollectors()...)
	ns := "topology"
	d := deployment(t, wds.Client, ns, "web", 3, nil)
	create(t, wds.Client, policy(ns, []string{"wec1", "wec2"},
		clause("apps", "deployments", ns, []string{"web"}, multi, collectors("available-replicas-histogram"))))
	_, _ = startManager(t, wds, aggregator.Options{ITSConfig: its.Config})

	// First only another WDS's WorkStatus for an object of the same name, in wec2's mailbox, and
	// wec1's report: wec2 has reported nothing (its groupBy fails, so its row is dropped).
	foreign := &controlv1alpha1.WorkStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "wec2", Name: "from-wds2", Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: "wds2"}},
		Spec:       controlv1alpha1.WorkStatusSpec{SourceRef: deploymentRef(d)},
	}
	create(t, its.Client, foreign)
	raw, _ := json.Marshal(deploymentStatus(3, 0, 1))
	foreign.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
	if err := its.Client.Status().Update(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}

	report(t, its.Client, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	expectResult(t, wds.Client, d, ns, ns, "available-replicas-histogram", [][]string{{"3", "1"}})
	report(t, its.Client, "wec2", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	expectResult(t, wds.Client, d, ns, ns, "available-replicas-histogram", [][]string{{"2", "1"}, {"3", "1"}})
	expectReturn(t, wds.Client, d, "2", 2)
	var list controlv1alpha1.CombinedStatusList
	if err := its.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d CombinedStatus objects written to the ITS", len(list.Items))
	}
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// expectResult waits until the pair's CombinedStatus has the named result with these cells.
func expectResult(t *testing.T, c client.Client, obj client.Object, policyName, ns, collector string, want [][]string) *controlv1alpha1.CombinedStatus {
	t.Helper()
	var cs *controlv1alpha1.CombinedStatus
	eventually(t, fmt.Sprintf("CombinedStatus %s/%s result %s = %v", obj.GetName(), policyName, collector, want), func() error {
		var err error
		if cs, err = combinedStatus(c, obj, policyName, ns); err != nil {
			return err
		}
		r, err := result(cs, collector)
		if err != nil {
			return err
		}
		if got := cells(r); !slices.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("cells %v", got)
		}
		return nil
	})
	return cs
}

func testKubeStellarDocCollectors(t *testing.T, c client.Client) {
	ns := "doc-collectors"
	d := deployment(t, c, ns, "web", 3, map[string]string{"app.kubernetes.io/name": "nginx"})
	create(t, c, policy(ns, []string{"wec1", "wec2", "wec3"}, clause("apps", "deployments", ns, []string{"web"},
		collectors("count-wecs", "available-replicas-histogram", "not-as-available-as-desired", "full-status"))))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec2", deploymentRef(d), deploymentStatus(3, 1, 1), applied(1))
	// wec3 has reported nothing: it counts, it has no availableReplicas.
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"3"}})
	expectResult(t, c, d, ns, ns, "available-replicas-histogram", [][]string{{"1", "1"}, {"3", "1"}})
	expectResult(t, c, d, ns, ns, "not-as-available-as-desired", [][]string{{"wec2"}})
	cs := expectResult(t, c, d, ns, ns, "full-status", [][]string{
		{"wec1", jsonCell(t, deploymentStatus(3, 3, 1))}, {"wec2", jsonCell(t, deploymentStatus(3, 1, 1))}, {"wec3", "null"}})
	// Metadata of docs/rules.md "CombinedStatus".
	wantLabels := map[string]string{
		controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
		controlv1alpha1.LabelCombinedStatusNamespace: ns, controlv1alpha1.LabelCombinedStatusName: "web",
		controlv1alpha1.LabelCombinedStatusBindingPolicy: ns,
	}
	for k, v := range wantLabels {
		if cs.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cs.Labels[k], v)
		}
	}
	if len(cs.OwnerReferences) != 1 || cs.OwnerReferences[0].UID != d.UID {
		t.Errorf("owner references %+v, want the Deployment %s", cs.OwnerReferences, d.UID)
	}
	if names := resultNames(cs); !slices.IsSorted(names) {
		t.Errorf("results not ordered by collector name: %v", names)
	}
	// Another writer's label and annotation on the CombinedStatus survive statusfold's updates.
	cs.Labels["team"] = "payments"
	cs.Annotations = map[string]string{"note": "kept"}
	if err := c.Update(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	// Updates: wec2 becomes fully available, wec3 reports.
	report(t, c, "wec2", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec3", deploymentRef(d), deploymentStatus(3, 2, 1), applied(1))
	expectResult(t, c, d, ns, ns, "available-replicas-histogram", [][]string{{"2", "1"}, {"3", "2"}})
	cs = expectResult(t, c, d, ns, ns, "not-as-available-as-desired", [][]string{{"wec3"}})
	if cs.Labels["team"] != "payments" || cs.Annotations["note"] != "kept" {
		t.Errorf("another writer's label/annotation lost: labels %v, annotations %v", cs.Labels, cs.Annotations)
	}
	// Object deleted → CombinedStatus gone.
	if err := c.Delete(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CombinedStatus deleted with its object", func() error {
		var list controlv1alpha1.CombinedStatusList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d CombinedStatus objects left", len(list.Items))
		}
		return nil
	})
}

func resultNames(cs *controlv1alpha1.CombinedStatus) []string {
	var out []string
	for _, r := range cs.Results {
		out = append(out, r.Name)
	}
	return out
}

// jsonCell is how cells renders an Object value: its plain JSON (docs/rules.md "Wire format"), compact with sorted keys.
func jsonCell(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

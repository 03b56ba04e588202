package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// returned reads the object's label and status fields the tests look at.
type returned struct {
	label        string // "" = absent
	hasLabel     bool
	ready        int64
	hasReady     bool
	observedGen  int64
	otherManager int64 // status.collisionCount, written by another field manager
	// ksLabels are KubeStellar's status-return labels present on the object ("key=value").
	ksLabels []string
}

func readReturned(c client.Client, d *appsv1.Deployment) (returned, error) {
	u, err := getObject(c, d, d.Namespace, d.Name)
	if err != nil {
		return returned{}, err
	}
	var r returned
	r.label, r.hasLabel = u.GetLabels()[aggregator.LabelExecutingCount]
	r.ready, r.hasReady, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	r.observedGen, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	r.otherManager, _, _ = unstructured.NestedInt64(u.Object, "status", "collisionCount")
	for _, k := range []string{aggregator.LabelSingletonStatus, aggregator.LabelMultiWECStatus} {
		if v, ok := u.GetLabels()[k]; ok {
			r.ksLabels = append(r.ksLabels, k+"="+v)
		}
	}
	return r, nil
}

// expectReturn waits until the object's label and readyReplicas are as wanted (wantReady < 0:
// no readyReplicas; wantLabel "": no label), and KubeStellar's status-return label says what was
// returned (docs/rules.md "Wire format"): singletonstatus for a copy (one qualified WEC), multiwecstatus for an
// aggregate (several), none when nothing of ours is in .status.
func expectReturn(t *testing.T, c client.Client, d *appsv1.Deployment, wantLabel string, wantReady int64) returned {
	t.Helper()
	var wantKS []string
	switch {
	case wantReady < 0:
	case wantLabel == "1":
		wantKS = []string{aggregator.LabelSingletonStatus + "=true"}
	default:
		wantKS = []string{aggregator.LabelMultiWECStatus + "=true"}
	}
	var got returned
	eventually(t, fmt.Sprintf("%s/%s label=%q ready=%d", d.Namespace, d.Name, wantLabel, wantReady), func() error {
		var err error
		if got, err = readReturned(c, d); err != nil {
			return err
		}
		if got.hasLabel != (wantLabel != "") || got.label != wantLabel {
			return fmt.Errorf("label %q (present %v)", got.label, got.hasLabel)
		}
		if got.hasReady != (wantReady >= 0) || (wantReady >= 0 && got.ready != wantReady) {
			return fmt.Errorf("readyReplicas %d (present %v)", got.ready, got.hasReady)
		}
		if !slices.Equal(got.ksLabels, wantKS) {
			return fmt.Errorf("KubeStellar status-return labels %v, want %v", got.ksLabels, wantKS)
		}
		return nil
	})
	return got
}

// bindingLists waits until the policy's Binding lists the object.
func bindingLists(t *testing.T, c client.Client, policyName string, ns, name string) {
	t.Helper()
	eventually(t, "binding "+policyName+" lists "+ns+"/"+name, func() error {
		var b controlv1alpha1.Binding
		if err := c.Get(context.Background(), client.ObjectKey{Name: policyName}, &b); err != nil {
			return err
		}
		for _, o := range b.Spec.Workload.NamespaceScope {
			if o.Namespace == ns && o.Name == name {
				return nil
			}
		}
		return fmt.Errorf("not listed: %+v", b.Spec.Workload)
	})
}

// testTruthTable checks every row of the docs/rules.md "Status return" table on its own object.
func testTruthTable(t *testing.T, c client.Client) {
	rows := []struct {
		name             string
		singleton, multi bool
		wecs             []string
		wantLabel        string
		wantReady        int64 // -1: nothing of ours
	}{
		{"singleton-1", true, false, []string{"wec1"}, "1", 3},
		{"singleton-0", true, false, nil, "0", -1},
		{"singleton-2", true, false, []string{"wec1", "wec2"}, "2", -1},
		{"multi-1", false, true, []string{"wec2"}, "1", 1},
		{"multi-2", false, true, []string{"wec1", "wec3"}, "2", 2},
		{"both-1", true, true, []string{"wec3"}, "1", 2},
		{"both-3", true, true, []string{"wec1", "wec2", "wec3"}, "3", 1},
		{"neither-2", false, false, []string{"wec1", "wec2"}, "", -1},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ns := "tt-" + row.name
			d := deployment(t, c, ns, "web", 3, nil)
			var mods []func(*controlv1alpha1.DownsyncPolicyClause)
			if row.singleton {
				mods = append(mods, singleton)
			}
			if row.multi {
				mods = append(mods, multi)
			}
			clusters := row.wecs
			if len(clusters) == 0 {
				clusters = []string{"none"}
			}
			create(t, c, policy(ns, clusters, clause("apps", "deployments", ns, []string{"web"}, mods...)))
			for _, w := range []string{"wec1", "wec2", "wec3"} {
				if slices.Contains(row.wecs, w) {
					report(t, c, w, deploymentRef(d), deploymentStatus(3, readyOf[w], d.Generation), applied(d.Generation))
				}
			}
			bindingLists(t, c, ns, ns, "web")
			got := expectReturn(t, c, d, row.wantLabel, row.wantReady)
			if row.wantReady >= 0 && got.observedGen != d.Generation {
				t.Errorf("observedGeneration %d, want %d (every WEC applied it)", got.observedGen, d.Generation)
			}
		})
	}
}

// testTransitions: multi-WEC return with the WEC set going 2 → 1 → 0, then the flag turned off;
// a status field written by another field manager survives all of it.
func testTransitions(t *testing.T, c client.Client) {
	ns := "transitions"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy(ns, []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, multi)))
	for _, w := range []string{"wec1", "wec2"} {
		report(t, c, w, deploymentRef(d), deploymentStatus(3, readyOf[w], d.Generation), applied(d.Generation))
	}
	expectReturn(t, c, d, "2", 1) // aggregate: the minimum of 3 and 1

	// Another manager owns status.collisionCount.
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": d.Name, "namespace": ns},
		"status":   map[string]any{"collisionCount": int64(7)},
	}}
	if err := c.SubResource("status").Apply(context.Background(), client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("other-controller")); err != nil {
		t.Fatal(err)
	}

	setSelected := func(clusters ...string) {
		updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) {
			bp.Spec.ClusterSelectors[0].MatchExpressions[0].Values = clusters
		})
	}
	setSelected("wec1")
	if got := expectReturn(t, c, d, "1", 3); got.otherManager != 7 { // copy of wec1
		t.Errorf("after 2→1: collisionCount = %d, want 7 (another manager's field)", got.otherManager)
	}
	setSelected("none")
	if got := expectReturn(t, c, d, "0", -1); got.otherManager != 7 {
		t.Errorf("after 1→0: collisionCount = %d, want 7", got.otherManager)
	}
	setSelected("wec1", "wec2")
	expectReturn(t, c, d, "2", 1)
	updatePolicy(t, c, ns, func(bp *controlv1alpha1.BindingPolicy) { bp.Spec.Downsync[0].WantMultiWECReportedState = false })
	if got := expectReturn(t, c, d, "", -1); got.otherManager != 7 {
		t.Errorf("after flag off: collisionCount = %d, want 7", got.otherManager)
	}
}

// testFieldTaken: another manager takes over (with force) a field that statusfold returns; from
// then on statusfold leaves that field alone and keeps returning the others.
func testFieldTaken(t *testing.T, c client.Client) {
	ns := "taken"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, d.Generation), applied(d.Generation))
	expectReturn(t, c, d, "1", 3)
	takeStatusField(t, c, d, "readyReplicas", 3)
	// The WEC's state changes: availableReplicas follows it, readyReplicas stays the other's.
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, d.Generation), applied(d.Generation))
	eventually(t, "availableReplicas returned, readyReplicas left to the other manager", func() error {
		u, err := getObject(c, d, ns, d.Name)
		if err != nil {
			return err
		}
		avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		if avail != 2 || ready != 3 {
			return fmt.Errorf("availableReplicas %d (want 2), readyReplicas %d (want 3)", avail, ready)
		}
		return nil
	})
}

// testFieldRejected: a returned status that the kind's validation refuses in part (more ready
// than desired replicas) is written without the refused fields.
func testFieldRejected(t *testing.T, c client.Client) {
	ns := "rejected"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), map[string]any{"observedGeneration": d.Generation, "replicas": 3, "updatedReplicas": 3,
		"readyReplicas": 5, "availableReplicas": 2}, applied(d.Generation))
	eventually(t, "status written without the refused fields", func() error {
		u, err := getObject(c, d, ns, d.Name)
		if err != nil {
			return err
		}
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		if _, ok := st["readyReplicas"]; ok || st["updatedReplicas"] != int64(3) || st["replicas"] != int64(3) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// readyOf is what each simulated WEC reports as ready/available replicas (of 3).
var readyOf = map[string]int64{"wec1": 3, "wec2": 1, "wec3": 2}

// TestController runs the reconciler in-process against one real apiserver and checks the
// scenarios of docs/rules.md ("Bindings", "CombinedStatus", "Status return", "ContentClassifier"). Scenarios use their own namespaces, objects and policies.
func TestController(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2", "wec3"} {
		addCluster(t, c, w, map[string]string{"name": w, "location-group": "edge"})
	}
	agg, _ := startManager(t, cp, aggregator.Options{})
	create(t, c, kubestellarDocCollectors()...)

	t.Run("TruthTable", func(t *testing.T) { testTruthTable(t, c) })
	t.Run("Transitions", func(t *testing.T) { testTransitions(t, c) })
	t.Run("FieldTakenByAnotherManager", func(t *testing.T) { testFieldTaken(t, c) })
	t.Run("FieldRejectedByValidation", func(t *testing.T) { testFieldRejected(t, c) })
	t.Run("KubeStellarDocCollectors", func(t *testing.T) { testKubeStellarDocCollectors(t, c) })
	t.Run("MissingInvalidAndChangedCollector", func(t *testing.T) { testCollectorLifecycle(t, c) })
	t.Run("ClusterLabelMovesWEC", func(t *testing.T) { testClusterLabels(t, c) })
	t.Run("ContentClassifierPruning", func(t *testing.T) { testPruning(t, c) })
	t.Run("TwoPolicies", func(t *testing.T) { testTwoPolicies(t, c) })
	t.Run("ClusterScoped", func(t *testing.T) { testClusterScoped(t, c) })
	t.Run("WildcardPolicy", func(t *testing.T) { testWildcard(t, c, agg) })
	t.Run("AggregationPolicy", func(t *testing.T) { testAggregationPolicy(t, c) })
}

// kubestellarDocCollectors are the StatusCollectors of KubeStellar's "Combined Status from WECs"
// docs (as in config/samples/10-statuscollectors.yaml).
func kubestellarDocCollectors() []client.Object {
	count := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "count-wecs"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "count", Type: controlv1alpha1.AggregatorTypeCount}}, Limit: 10}}
	hist := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "available-replicas-histogram"},
		Spec: controlv1alpha1.StatusCollectorSpec{
			GroupBy:        []controlv1alpha1.NamedExpression{{Name: "numAvailable", Def: "returned.status.availableReplicas"}},
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "count", Type: controlv1alpha1.AggregatorTypeCount}}}}
	notAvail := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "not-as-available-as-desired"},
		Spec: controlv1alpha1.StatusCollectorSpec{
			Filter: expr("obj.spec.replicas != returned.status.availableReplicas"),
			Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}}}}
	full := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "full-status"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "status", Def: "returned.status"}}}}
	return []client.Object{count, hist, notAvail, full}
}

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

// condition returns the StatusCollectorsAvailable condition of a policy and of its binding.
func collectorConditions(c client.Client, name string) (bp, b *controlv1alpha1.BindingPolicyCondition, err error) {
	var p controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
		return nil, nil, err
	}
	var bd controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &bd); err != nil {
		return nil, nil, err
	}
	find := func(cs []controlv1alpha1.BindingPolicyCondition) *controlv1alpha1.BindingPolicyCondition {
		for i := range cs {
			if cs[i].Type == controlv1alpha1.ConditionStatusCollectorsAvailable {
				return &cs[i]
			}
		}
		return nil
	}
	return find(p.Status.Conditions), find(bd.Status.Conditions), nil
}

func expectCollectorsCondition(t *testing.T, c client.Client, name string, status corev1.ConditionStatus, msgPart string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s StatusCollectorsAvailable=%s %q", name, status, msgPart), func() error {
		bp, b, err := collectorConditions(c, name)
		if err != nil {
			return err
		}
		for what, cond := range map[string]*controlv1alpha1.BindingPolicyCondition{"BindingPolicy": bp, "Binding": b} {
			if cond == nil {
				return fmt.Errorf("%s has no condition", what)
			}
			if cond.Status != status || !strings.Contains(cond.Message, msgPart) {
				return fmt.Errorf("%s condition %s %q", what, cond.Status, cond.Message)
			}
		}
		return nil
	})
}

// testCollectorLifecycle: a missing collector, then created; an invalid one reported in its
// status; a spec change of a valid one.
func testCollectorLifecycle(t *testing.T, c client.Client) {
	ns := "lifecycle"
	d := deployment(t, c, ns, "web", 3, nil)
	invalid := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: controlv1alpha1.StatusCollectorSpec{ // select and combinedFields are exclusive
			Select:         []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}},
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}}}
	create(t, c, invalid)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("late", "broken"))))
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "missing: late")
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "invalid: broken")
	eventually(t, "invalid collector reports its errors", func() error {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(context.Background(), client.ObjectKey{Name: "broken"}, &sc); err != nil {
			return err
		}
		if sc.Status.ObservedGeneration != sc.Generation || len(sc.Status.Errors) == 0 {
			return fmt.Errorf("status %+v", sc.Status)
		}
		if cond := findCondition(sc.Status.Conditions, controlv1alpha1.ConditionValid); cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("Valid condition %+v", cond)
		}
		return nil
	})
	eventually(t, "CombinedStatus with no valid collector has no results", func() error {
		cs, err := combinedStatus(c, d, ns, ns)
		if err != nil {
			return err
		}
		if len(cs.Results) != 0 {
			return fmt.Errorf("results %v", resultNames(cs))
		}
		return nil
	})
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	late := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}}}
	create(t, c, late)
	expectResult(t, c, d, ns, ns, "late", [][]string{{"1"}})
	expectCollectorsCondition(t, c, ns, corev1.ConditionFalse, "invalid: broken")
	// Fix the broken collector and change the late one.
	var sc controlv1alpha1.StatusCollector
	if err := c.Get(context.Background(), client.ObjectKey{Name: "broken"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.CombinedFields = nil
	if err := c.Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	expectCollectorsCondition(t, c, ns, corev1.ConditionTrue, "")
	expectResult(t, c, d, ns, ns, "broken", [][]string{{"wec1"}})
	if err := c.Get(context.Background(), client.ObjectKey{Name: "late"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.CombinedFields = []controlv1alpha1.NamedAggregator{{Name: "total", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.readyReplicas")}}
	if err := c.Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	cs := expectResult(t, c, d, ns, ns, "late", [][]string{{"3"}})
	if r, _ := result(cs, "late"); !slices.Equal(r.ColumnNames, []string{"total"}) {
		t.Errorf("columns %v after the spec change, want [total]", r.ColumnNames)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// testClusterLabels: a cluster's label change moves it into and out of a policy's destinations.
func testClusterLabels(t *testing.T, c client.Client) {
	ns := "moves"
	addCluster(t, c, "mv1", map[string]string{"zone": "a"})
	addCluster(t, c, "mv2", map[string]string{"zone": "b"})
	d := deployment(t, c, ns, "web", 1, nil)
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "a"}}}
	clause("apps", "deployments", ns, nil, collectors("full-status"))(bp)
	create(t, c, bp)
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv1", "null"}})
	setClusterLabels(t, c, "mv2", map[string]string{"zone": "a"})
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv1", "null"}, {"mv2", "null"}})
	setClusterLabels(t, c, "mv1", map[string]string{"zone": "b"})
	expectResult(t, c, d, ns, ns, "full-status", [][]string{{"mv2", "null"}})
}

// testPruning: a ContentClassifier's dontPropagatePointers under status remove those parts from
// the CombinedStatus and the copied status; an invalid classifier reports its errors.
func testPruning(t *testing.T, c client.Client) {
	ns := "pruning"
	rs := replicaSet(t, c, ns, "rs", 2)
	cc := &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "replicasets.v1.apps"},
		Spec: controlv1alpha1.ContentClassifierSpec{DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "fullyLabeledReplicas"}}}}
	bad := &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "pods.v1"},
		Spec: controlv1alpha1.ContentClassifierSpec{DesiredStatePointers: []controlv1alpha1.JSONPointer{{"status", "phase"}}}}
	create(t, c, cc, bad)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "replicasets", ns, nil, singleton, collectors("full-status"))))
	ref := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "rs"}
	report(t, c, "wec1", ref, map[string]any{"replicas": 2, "readyReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1}, applied(1))
	expectResult(t, c, rs, ns, ns, "full-status", [][]string{{"wec1", jsonCell(t, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1})}})
	eventually(t, "copied status without the pruned field", func() error {
		u, err := getObject(c, rs, ns, "rs")
		if err != nil {
			return err
		}
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		if _, ok := st["fullyLabeledReplicas"]; ok || st["readyReplicas"] != int64(2) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	eventually(t, "invalid ContentClassifier reports its errors", func() error {
		var got controlv1alpha1.ContentClassifier
		if err := c.Get(context.Background(), client.ObjectKey{Name: "pods.v1"}, &got); err != nil {
			return err
		}
		cond := findCondition(got.Status.Conditions, controlv1alpha1.ConditionValid)
		if got.Status.ObservedGeneration != got.Generation || len(got.Status.Errors) != 1 || cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("status %+v", got.Status)
		}
		if !strings.Contains(got.Status.Errors[0], "spec.desiredStatePointers[0]") {
			return fmt.Errorf("error %q does not name the field", got.Status.Errors[0])
		}
		return nil
	})
	// Removing the classifier brings the field back.
	if err := c.Delete(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	expectResult(t, c, rs, ns, ns, "full-status", [][]string{{"wec1", jsonCell(t, map[string]any{"replicas": 2, "readyReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1})}})
}

// testTwoPolicies: one object, two policies, two CombinedStatus objects.
func testTwoPolicies(t *testing.T, c client.Client) {
	ns := "two"
	d := deployment(t, c, ns, "web", 1, nil)
	create(t, c,
		policy("two-a", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-wecs"))),
		policy("two-b", []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-wecs"))))
	expectResult(t, c, d, "two-a", ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, d, "two-b", ns, "count-wecs", [][]string{{"2"}})
	// Deleting one policy removes its pair only.
	if err := c.Delete(context.Background(), &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "two-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "only two-b's CombinedStatus is left", func() error {
		var list controlv1alpha1.CombinedStatusList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var policies []string
		for _, cs := range list.Items {
			policies = append(policies, cs.Labels[controlv1alpha1.LabelCombinedStatusBindingPolicy])
		}
		if !slices.Equal(policies, []string{"two-b"}) {
			return fmt.Errorf("CombinedStatus of policies %v", policies)
		}
		return nil
	})
}

// testClusterScoped: a cluster-scoped object's CombinedStatus lives in kubestellar-report.
func testClusterScoped(t *testing.T, c client.Client) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-test-role"}}
	create(t, c, role)
	bp := policy("cluster-scoped", []string{"wec1", "wec2"}, clause("rbac.authorization.k8s.io", "clusterroles", "", []string{role.Name}, collectors("count-wecs")))
	bp.Spec.Downsync[0].Namespaces = []string{"*"}
	create(t, c, bp)
	cs := expectResult(t, c, role, "cluster-scoped", controlv1alpha1.ReportNamespace, "count-wecs", [][]string{{"2"}})
	if cs.Labels[controlv1alpha1.LabelCombinedStatusNamespace] != "" || cs.Labels[controlv1alpha1.LabelCombinedStatusResource] != "clusterroles" {
		t.Errorf("labels %v", cs.Labels)
	}
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: "cluster-scoped"}, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.Workload.ClusterScope) != 1 || b.Spec.Workload.ClusterScope[0].Name != role.Name || b.Spec.Workload.ClusterScope[0].Version != "v1" {
		t.Errorf("binding clusterScope %+v", b.Spec.Workload.ClusterScope)
	}
	if !slices.Equal(destNames(&b), []string{"wec1", "wec2"}) {
		t.Errorf("destinations %v", destNames(&b))
	}
	if err := c.Delete(context.Background(), role); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster-scoped object's CombinedStatus deleted", func() error {
		_, err := combinedStatus(c, role, "cluster-scoped", controlv1alpha1.ReportNamespace)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})
}

func destNames(b *controlv1alpha1.Binding) []string {
	var out []string
	for _, d := range b.Spec.Destinations {
		out = append(out, d.ClusterId)
	}
	return out
}

// testWildcard: the shape of KubeStellar's documented BindingPolicy, objectSelectors alone
// (api/control/v1alpha1/testdata/bindingpolicies.yaml), selects objects of every resource
// (discovery-wide watches).
func testWildcard(t *testing.T, c client.Client, agg *aggregator.Aggregator) {
	ns := "wildcard"
	lbl := map[string]string{"app.kubernetes.io/name": "wild"}
	d := deployment(t, c, ns, "web", 1, lbl)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg", Labels: lbl}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}}
	create(t, c, cm, other)
	bp := policy(ns, []string{"wec1"})
	bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: lbl}}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{"count-wecs"}},
	}}
	create(t, c, bp)
	expectResult(t, c, d, ns, ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, cm, ns, ns, "count-wecs", [][]string{{"1"}})
	var b controlv1alpha1.Binding
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, &b); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range b.Spec.Workload.NamespaceScope {
		names = append(names, o.Resource+"/"+o.Name)
	}
	if !slices.Equal(names, []string{"configmaps/cfg", "deployments/web"}) {
		t.Errorf("binding lists %v, want [configmaps/cfg deployments/web]", names)
	}
	// Deleting the policy stops the watches only it needed (configmaps), and keeps the others.
	if !slices.Contains(agg.WatchedResources(), "/v1, Resource=configmaps") {
		t.Fatalf("configmaps not watched while the policy selects them: %v", agg.WatchedResources())
	}
	if err := c.Delete(context.Background(), bp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "configmaps no longer watched", func() error {
		w := agg.WatchedResources()
		if slices.Contains(w, "/v1, Resource=configmaps") || !slices.Contains(w, "apps/v1, Resource=deployments") {
			return fmt.Errorf("watched %v", w)
		}
		return nil
	})
}

// testAggregationPolicy: a valid AggregationPolicy replaces the kind's module in the manager; an
// invalid one is reported in its status and ignored.
func testAggregationPolicy(t *testing.T, c client.Client) {
	ns := "aggpol"
	rs := replicaSet(t, c, ns, "rs", 2)
	create(t, c, policy(ns, []string{"wec1", "wec2"}, clause("apps", "replicasets", ns, nil, multi)))
	ref := controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Namespace: ns, Name: "rs"}
	for _, w := range []string{"wec1", "wec2"} {
		report(t, c, w, ref, map[string]any{"replicas": 2, "readyReplicas": 2, "observedGeneration": 1}, applied(1))
	}
	replicasOf := func() (int64, error) {
		u, err := getObject(c, rs, ns, "rs")
		if err != nil {
			return 0, err
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return n, nil
	}
	eventually(t, "built-in aggregate", func() error {
		if n, err := replicasOf(); err != nil || n != 2 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
	valid := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "replicasets-fixed"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "ReplicaSet"},
			Rego: "package statusfold.user.replicasets\n\nstatus := {\"replicas\": 42}\n"}}
	invalid := &policyv1alpha1.AggregationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken-rego"},
		Spec: policyv1alpha1.AggregationPolicySpec{Target: policyv1alpha1.TargetKind{Group: "apps", Kind: "StatefulSet"},
			Rego: "package statusfold.user.broken\n\nstatus := {\n"}}
	create(t, c, valid, invalid)
	eventually(t, "the user module's aggregate", func() error {
		if n, err := replicasOf(); err != nil || n != 42 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
	eventually(t, "AggregationPolicy validity in status", func() error {
		for name, want := range map[string]metav1.ConditionStatus{"replicasets-fixed": metav1.ConditionTrue, "broken-rego": metav1.ConditionFalse} {
			var ap policyv1alpha1.AggregationPolicy
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &ap); err != nil {
				return err
			}
			cond := findCondition(ap.Status.Conditions, controlv1alpha1.ConditionValid)
			if cond == nil || cond.Status != want || ap.Status.ObservedGeneration != ap.Generation {
				return fmt.Errorf("%s: status %+v", name, ap.Status)
			}
			if want == metav1.ConditionFalse && (len(ap.Status.Errors) == 0 || !strings.Contains(ap.Status.Errors[0], "spec.rego")) {
				return fmt.Errorf("%s: errors %v", name, ap.Status.Errors)
			}
		}
		return nil
	})
	if err := c.Delete(context.Background(), valid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "built-in aggregate again", func() error {
		if n, err := replicasOf(); err != nil || n != 2 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
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

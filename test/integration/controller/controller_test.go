package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// readyOf is what each simulated WEC reports as ready/available replicas (of 3).
var readyOf = map[string]int64{"wec1": 3, "wec2": 1, "wec3": 2}

// TestController runs the reconciler in-process against one real apiserver and checks the
// scenarios of docs/rules.md ("Bindings", "CombinedStatus", "Status return", "ContentClassifier").
// Scenarios use their own namespaces, objects and policies; they are in files by topic: the
// status return (return_test.go), CombinedStatus results (combinedstatus_test.go), collectors'
// lifecycle (collectors_test.go), which objects and WECs are selected (selection_test.go),
// ContentClassifier pruning (classifier_test.go), AggregationPolicies
// (aggregationpolicy_test.go) and Lua health checks (luahealth_test.go).
func TestController(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2", "wec3"} {
		addCluster(t, c, w, map[string]string{"name": w, "location-group": "edge"})
	}
	agg, _ := startManager(t, cp, aggregator.Options{LuaHealthConfigMap: luaHealthNamespace + "/" + luaHealthName})
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
	t.Run("LuaHealth", func(t *testing.T) { testLuaHealth(t, c) })
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

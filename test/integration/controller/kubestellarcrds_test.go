package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// kubestellarCRDs holds KubeStellar v0.30.0's CRDs of the kinds whose schema lacks fields that
// statusfold writes, copied unchanged from its module's config/crd/bases.
const kubestellarCRDs = "testdata/kubestellar-v0.30.0"

// TestUnderKubeStellarCRDs: KubeStellar's controller-manager replaces the CRDs of its kinds with its
// own at every start (docs/kubestellar.md). Under them, a CombinedStatus with an aggregation error
// is still written (without statusfold's aggregationErrors[].row and .count) and a StatusCollector's
// status is written (without .status.conditions); what was dropped is reported. Put back at
// runtime, statusfold's own CRD is picked up and nothing is dropped any more.
func TestUnderKubeStellarCRDs(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	ns := "ks-crds"
	d := deployment(t, c, ns, "web", 3, nil)

	installKubeStellarCRDs(t, c)
	sumPhase(t, c, d, ns)

	droppedBefore := counter(t, "statusfold_status_fields_dropped_total", "reason", "served-schema")
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Second})

	cs := expectWrittenUnderKubeStellarCRDs(t, c, d, ns)
	if got := counter(t, "statusfold_status_fields_dropped_total", "reason", "served-schema"); got < droppedBefore+3 {
		t.Errorf("statusfold_status_fields_dropped_total{reason=served-schema} went from %v to %v, want +3 at least", droppedBefore, got)
	}
	// Reported once per kind and schema: another write with the same fields dropped (wec1's value
	// is now the first one skipped, so the error changes) adds no Event.
	first := aggregationError(c, ns, cs.Name)
	reportStatus(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Failed"})
	eventually(t, "the second write's aggregation error", func() error {
		if e := aggregationError(c, ns, cs.Name); e == first {
			return fmt.Errorf("aggregation error unchanged: %q", e)
		}
		return expectAggregationError(c, ns, cs.Name, false)
	})
	if evs, err := events(c, ns, cs.Name, "FieldsDropped"); err != nil || len(evs) != 1 {
		t.Errorf("FieldsDropped Events on the CombinedStatus: %d (%v), want 1", len(evs), err)
	}

	// Nothing written when nothing changed: the stored objects lack what the schema cannot hold, and
	// that alone must not make each evaluation apply them again.
	expectNoCombinedStatusRewrite(t, c, d, ns, cs)
	expectNoCollectorStatusRewrite(t, c)

	// statusfold's own CRD back, at runtime: picked up, row and count written again.
	setCRDSchema(t, c, filepath.Join(framework.RepoRoot(), "config/crd/bases/control.kubestellar.io_combinedstatuses.yaml"))
	// statusfold re-reads the served schemas every CatalogRefresh; a write before that is still
	// pruned, so wec1's value changes until one is written whole.
	n := 0
	eventually(t, "aggregationErrors with row and count under statusfold's schema", func() error {
		err := expectAggregationError(c, ns, cs.Name, true)
		if err != nil {
			n++
			report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": fmt.Sprintf("Pending-%d", n)}, applied(d.Generation))
		}
		return err
	})
}

// expectWrittenUnderKubeStellarCRDs waits until, under KubeStellar's CRDs, d's CombinedStatus is
// written without aggregationErrors[].row and .count and the StatusCollector's status without
// conditions, and until each drop is reported by an Event; it returns the CombinedStatus.
func expectWrittenUnderKubeStellarCRDs(t *testing.T, c client.Client, d *appsv1.Deployment, ns string) *controlv1alpha1.CombinedStatus {
	t.Helper()
	cs := expectResult(t, c, d, "ks-crds", ns, "sum-phase", [][]string{{"2", "0"}})
	eventually(t, "aggregationErrors written without row and count", func() error {
		return expectAggregationError(c, ns, cs.Name, false)
	})
	eventually(t, "the StatusCollector's status written without conditions", func() error {
		u, err := getObject(c, &controlv1alpha1.StatusCollector{}, "", "sum-phase")
		if err != nil {
			return err
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if gen != u.GetGeneration() {
			return fmt.Errorf("status.observedGeneration %d, generation %d: %v", gen, u.GetGeneration(), u.Object["status"])
		}
		if _, has := u.Object["status"].(map[string]any)["conditions"]; has {
			return fmt.Errorf("status.conditions stored under KubeStellar's schema: %v", u.Object["status"])
		}
		return nil
	})
	expectEvent(t, c, ns, cs.Name, "FieldsDropped", ".results[*].aggregationErrors[*].count, .results[*].aggregationErrors[*].row")
	expectEvent(t, c, "", "sum-phase", "FieldsDropped", ".status.conditions")
	return cs
}

// expectNoCombinedStatusRewrite: evaluations of d with nothing new do not apply its CombinedStatus
// cs (stored without what KubeStellar's schema lacks) again.
func expectNoCombinedStatusRewrite(t *testing.T, c client.Client, d *appsv1.Deployment, ns string, cs *controlv1alpha1.CombinedStatus) {
	t.Helper()
	expectNoRewrite(t, "an unchanged CombinedStatus", "object", objectsController, "combinedstatus", []func(){
		func() {
			// Another writer's label on the CombinedStatus: the evaluation it queues reads it, so the
			// manager's cache holds statusfold's last write of it too (an earlier event of the same
			// watch), and the re-report below is not judged against an older copy.
			setLabel(t, c, cs, "example.com/touched", "yes")
		},
		func() {
			// wec2 reports the same again, with a new lastCurrencyUpdateTime (one WorkStatus event).
			report(t, c, "wec2", deploymentRef(d), map[string]any{"phase": "Running"}, appliedAt(d.Generation, time.Now().Add(-time.Hour)))
		}},
		// The barrier: wec1's value changes (only its status, one event), so the aggregation error
		// names it and the CombinedStatus is written once.
		func() {
			reportStatus(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Unknown"})
			eventually(t, "the aggregation error of wec1's new value", func() error {
				if e := aggregationError(c, ns, cs.Name); !strings.Contains(e, "Unknown") {
					return fmt.Errorf("aggregation error %q does not name wec1's new value", e)
				}
				return nil
			})
		})
}

// expectNoCollectorStatusRewrite: evaluations of the StatusCollector sum-phase with nothing new do
// not apply its status (stored without the conditions KubeStellar's schema lacks) again.
func expectNoCollectorStatusRewrite(t *testing.T, c client.Client) {
	t.Helper()
	updateCollector := func(mutate func(*controlv1alpha1.StatusCollector)) {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(context.Background(), client.ObjectKey{Name: "sum-phase"}, &sc); err != nil {
			t.Fatal(err)
		}
		mutate(&sc)
		if err := c.Update(context.Background(), &sc); err != nil {
			t.Fatal(err)
		}
	}
	expectNoRewrite(t, "an unchanged StatusCollector status", "kind", kindsController, "statuscollector-status", []func(){
		func() {
			// An update that changes no generation.
			updateCollector(func(sc *controlv1alpha1.StatusCollector) { sc.Labels = map[string]string{"touched": "yes"} })
		}},
		// The barrier: a new generation, whose observedGeneration is written once.
		func() {
			// The results (one row) stay the same.
			updateCollector(func(sc *controlv1alpha1.StatusCollector) { sc.Spec.Limit = 19 })
			eventually(t, "the StatusCollector's new generation observed", func() error {
				u, err := getObject(c, &controlv1alpha1.StatusCollector{}, "", "sum-phase")
				if err != nil {
					return err
				}
				if gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); gen != u.GetGeneration() {
					return fmt.Errorf("status.observedGeneration %d, generation %d", gen, u.GetGeneration())
				}
				return nil
			})
		})
}

// sumPhase creates a StatusCollector "sum-phase" (COUNT, and a SUM over returned.status.phase, a
// string: an aggregation error for column "sum", which statusfold's schema gives a row and a
// count) and a BindingPolicy "ks-crds" that selects d for wec1 and wec2 with it, and has both
// WECs report the phase Running.
func sumPhase(t *testing.T, c client.Client, d *appsv1.Deployment, ns string) {
	t.Helper()
	create(t, c,
		// (KubeStellar's schema requires limit.)
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "sum-phase"}, Spec: controlv1alpha1.StatusCollectorSpec{Limit: 20,
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "sum", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.phase")}}}},
		policy("ks-crds", []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, collectors("sum-phase"))),
	)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Running"}, applied(d.Generation))
	report(t, c, "wec2", deploymentRef(d), map[string]any{"phase": "Running"}, applied(d.Generation))
}

// TestKubeStellarCRDsReplacedAtRuntime: KubeStellar's controller-manager (re)starts while
// statusfold runs and replaces the CRDs. The next writes are pruned to the new schema at once —
// not after the next periodic look at the published schemas (an hour in this test): a write that the
// apiserver rejects for a field its schema does not declare makes statusfold re-read them.
func TestKubeStellarCRDsReplacedAtRuntime(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	ns := "ks-crds-runtime"
	d := deployment(t, c, ns, "web", 3, nil)
	sumPhase(t, c, d, ns)
	startManager(t, cp, aggregator.Options{CatalogRefresh: time.Hour})
	cs := expectResult(t, c, d, "ks-crds", ns, "sum-phase", [][]string{{"2", "0"}})
	eventually(t, "aggregationErrors with row and count under statusfold's schema", func() error {
		return expectAggregationError(c, ns, cs.Name, true)
	})
	eventually(t, "the StatusCollector's Valid condition", func() error {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(context.Background(), client.ObjectKey{Name: "sum-phase"}, &sc); err != nil {
			return err
		}
		if len(sc.Status.Conditions) == 0 {
			return fmt.Errorf("no conditions: %+v", sc.Status)
		}
		return nil
	})

	installKubeStellarCRDs(t, c)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Failed"}, applied(d.Generation))
	eventually(t, "the new aggregation error written without row and count", func() error {
		if e := aggregationError(c, ns, cs.Name); !strings.Contains(e, "Failed") {
			return fmt.Errorf("aggregation error %q does not name wec1's new value", e)
		}
		return expectAggregationError(c, ns, cs.Name, false)
	})
	var sc controlv1alpha1.StatusCollector
	if err := c.Get(context.Background(), client.ObjectKey{Name: "sum-phase"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.Limit = 10
	if err := c.Update(context.Background(), &sc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatusCollector's status of its new generation written", func() error {
		u, err := getObject(c, &controlv1alpha1.StatusCollector{}, "", "sum-phase")
		if err != nil {
			return err
		}
		if gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); gen != u.GetGeneration() {
			return fmt.Errorf("status.observedGeneration %d, generation %d", gen, u.GetGeneration())
		}
		return nil
	})
}

// installKubeStellarCRDs puts KubeStellar's StatusCollector and CombinedStatus CRDs in place of
// statusfold's, as its controller-manager does at startup, and waits until they are served.
func installKubeStellarCRDs(t *testing.T, c client.Client) {
	t.Helper()
	replaceCRDVersions(t, c, "statuscollectors.control.kubestellar.io",
		filepath.Join(kubestellarCRDs, "control.kubestellar.io_statuscollectors.yaml"))
	replaceCRDVersions(t, c, "combinedstatuses.control.kubestellar.io",
		filepath.Join(kubestellarCRDs, "control.kubestellar.io_combinedstatuses.yaml"))
	eventually(t, "KubeStellar's CombinedStatus schema served", func() error {
		err := c.Create(context.Background(), aggregationErrorProbe(), client.DryRunAll, client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("a CombinedStatus with aggregationErrors[].row is still accepted: %v", err)
		}
		return nil
	})
}

// aggregationErrorProbe is a CombinedStatus that only statusfold's schema accepts.
func aggregationErrorProbe() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlv1alpha1.GroupVersion.String(), "kind": "CombinedStatus",
		"metadata": map[string]any{"namespace": "default", "name": "schema-probe"},
		"results": []any{map[string]any{"name": "p", "columnNames": []any{},
			"aggregationErrors": []any{map[string]any{"columnName": "c", "error": "e", "row": int64(0), "count": int64(1)}}}},
	}}
}

// expectAggregationError checks that the stored CombinedStatus has one aggregation error, for
// column "sum", with row and count (2 values skipped) when withExtras, else without them.
func expectAggregationError(c client.Client, ns, name string, withExtras bool) error {
	u, err := getCombinedStatus(c, ns, name)
	if err != nil {
		return err
	}
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	if len(results) != 1 {
		return fmt.Errorf("results %v", results)
	}
	errs, _, _ := unstructured.NestedSlice(results[0].(map[string]any), "aggregationErrors")
	if len(errs) != 1 {
		return fmt.Errorf("aggregationErrors %v, want one", errs)
	}
	e := errs[0].(map[string]any)
	if e["columnName"] != "sum" || e["error"] == "" {
		return fmt.Errorf("aggregationErrors[0] %v, want column sum with an error", e)
	}
	count, hasCount := e["count"]
	_, hasRow := e["row"]
	if withExtras && (!hasRow || count != int64(2)) {
		return fmt.Errorf("aggregationErrors[0] %v, want row and count 2", e)
	}
	if !withExtras && (hasRow || hasCount) {
		return fmt.Errorf("aggregationErrors[0] %v has fields KubeStellar's schema does not declare", e)
	}
	return nil
}

// aggregationError is the error text of the first aggregation error of the stored CombinedStatus.
func aggregationError(c client.Client, ns, name string) string {
	u, err := getCombinedStatus(c, ns, name)
	if err != nil {
		return ""
	}
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	if len(results) == 0 {
		return ""
	}
	errs, _, _ := unstructured.NestedSlice(results[0].(map[string]any), "aggregationErrors")
	if len(errs) == 0 {
		return ""
	}
	s, _ := errs[0].(map[string]any)["error"].(string)
	return s
}

// expectNoRewrite checks that evaluations of a work item with nothing to change write nothing.
// touches are changes that each make the manager evaluate a work item of evalKind (its controller
// named) once more with nothing to write; each evaluation is awaited before the next touch (they
// must not coalesce into one). barrier then makes a change that the same work item must write
// once, and waits until it is stored. The controller hands a work item to one worker at a time,
// and the barrier's change reaches it only after the touches' evaluations started, so the
// evaluation that writes it starts after theirs ended: once every started evaluation has ended
// and its writes are counted (evaluationsSettled), statusfold_writes_total{what} must have grown
// by exactly the barrier's one write.
func expectNoRewrite(t *testing.T, name, evalKind, controller, what string, touches []func(), barrier func()) {
	t.Helper()
	evaluationsSettled(t, evalKind, controller) // the earlier writes are counted
	writes := counter(t, "statusfold_writes_total", "what", what)
	for i, touch := range touches {
		evals := counter(t, "statusfold_evaluations_total", "kind", evalKind)
		touch()
		eventually(t, fmt.Sprintf("%s: touch %d evaluated", name, i+1), func() error {
			if got := counter(t, "statusfold_evaluations_total", "kind", evalKind); got <= evals {
				return fmt.Errorf("statusfold_evaluations_total{kind=%s} still %v", evalKind, got)
			}
			return nil
		})
	}
	barrier()
	evaluationsSettled(t, evalKind, controller)
	if got := counter(t, "statusfold_writes_total", "what", what); got != writes+1 {
		t.Errorf("%s: statusfold_writes_total{what=%s} went from %v to %v, want +1 (the barrier's write alone)", name, what, writes, got)
	}
}

// setLabel sets a label on obj as another writer would (a merge patch).
func setLabel(t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

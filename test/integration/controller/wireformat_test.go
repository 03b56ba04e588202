package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// TestOldFormCombinedStatusRewritten: CombinedStatuses that an earlier statusfold wrote — Object
// cells of nested typed values, `errors[]{wec: NAME}`, COUNT counting rows whose subject failed —
// are stored under the earlier CRD; after the upgrade (the current CRD, then the manager) each is
// rewritten in KubeStellar's wire format on its first evaluation, with no manual step (docs/rules.md "Wire format").
func TestOldFormCombinedStatusRewritten(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	ns := "old-form"
	d := oldFormInputs(t, c, ns)

	// A first run resolves the Bindings and writes both CombinedStatuses; then the manager stops,
	// and the CombinedStatuses are put back as the earlier statusfold wrote them, under its CRD.
	_, stop := startManager(t, cp, aggregator.Options{})
	expectResult(t, c, d, "values", ns, "full-status", [][]string{{"wec1", `{"availableReplicas":3,"phase":"Running"}`}, {"wec2", "null"}})
	expectResult(t, c, d, "errors", ns, "count-sum", [][]string{{"1", "3"}})
	stop()
	valuesName, errorsName := storeOldForms(t, c, d)

	startManager(t, cp, aggregator.Options{})
	eventually(t, "the Object cell rewritten as plain JSON", func() error {
		u, err := getCombinedStatus(c, ns, valuesName)
		if err != nil {
			return err
		}
		cell := firstRowCell(t, u, 1)
		obj, _, _ := unstructured.NestedMap(cell, "object")
		if want := map[string]any{"availableReplicas": int64(3), "phase": "Running"}; fmt.Sprint(obj) != fmt.Sprint(want) {
			return fmt.Errorf("object cell %v, want %v", cell, want)
		}
		return nil
	})
	eventually(t, "errors rewritten as rowErrors, the failing row left out of COUNT", func() error {
		return rewrittenErrors(t, c, ns, errorsName)
	})
}

// oldFormInputs makes TestOldFormCombinedStatusRewritten's inputs in ns: a Deployment bound to
// wec1 and wec2 by two policies with a collector each — one whose old form differs only in its
// Object cell, one only in its errors and its COUNT — and wec1's report (wec2 reports nothing).
func oldFormInputs(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "full-status"}, Spec: controlv1alpha1.StatusCollectorSpec{
			Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}, {Name: "status", Def: "returned.status"}}}},
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "count-sum"}, Spec: controlv1alpha1.StatusCollectorSpec{
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "sum", Type: controlv1alpha1.AggregatorTypeSum, Subject: expr("returned.status.availableReplicas")}}}},
		policy("values", []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, collectors("full-status"))),
		policy("errors", []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, collectors("count-sum"))),
	)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"availableReplicas": int64(3), "phase": "Running"}, applied(d.Generation))
	return d
}

// The results of TestOldFormCombinedStatusRewritten's two pairs as the earlier statusfold wrote
// them: an Object cell of nested typed values; `errors[]{wec: NAME}`, and a COUNT that counts the
// row whose subject failed.
var (
	oldFormValues = map[string]any{"name": "full-status", "columnNames": []any{"wec", "status"}, "rows": []any{
		map[string]any{"columns": []any{
			map[string]any{"type": "String", "string": "wec1"},
			map[string]any{"type": "Object", "object": map[string]any{
				"availableReplicas": map[string]any{"type": "Number", "float": "3"},
				"phase":             map[string]any{"type": "String", "string": "Running"}}}}},
		map[string]any{"columns": []any{map[string]any{"type": "String", "string": "wec2"}, map[string]any{"type": "Null"}}},
	}}
	oldFormErrors = map[string]any{"name": "count-sum", "columnNames": []any{"count", "sum"}, "rows": []any{
		map[string]any{"columns": []any{map[string]any{"type": "Number", "float": "2"}, map[string]any{"type": "Number", "float": "3"}}},
	}, "errors": []any{map[string]any{"wec": "wec2", "columnName": "sum", "error": "no such key: availableReplicas"}}}
)

// storeOldForms puts the earlier CRD back, stores d's two CombinedStatuses in their old form under
// it, then installs the current CRD and checks that the stored objects are still in the old form
// (the new schema keeps unknown fields in cells). It returns their names.
func storeOldForms(t *testing.T, c client.Client, d *appsv1.Deployment) (valuesName, errorsName string) {
	t.Helper()
	ns := d.Namespace
	setCRDSchema(t, c, "testdata/combinedstatuses-before-kubestellar-wire-format.yaml")
	valuesName = writeOldForm(t, c, d, "values", oldFormValues)
	errorsName = writeOldForm(t, c, d, "errors", oldFormErrors)

	setCRDSchema(t, c, filepath.Join(framework.RepoRoot(), "config/crd/bases/control.kubestellar.io_combinedstatuses.yaml"))
	u, err := getCombinedStatus(c, ns, valuesName)
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := unstructured.NestedString(firstRowCell(t, u, 1), "object", "availableReplicas", "type"); typ != "Number" {
		t.Fatalf("precondition: the stored Object cell is not in the old form: %v", u.Object["results"])
	}
	if u, err = getCombinedStatus(c, ns, errorsName); err != nil {
		t.Fatal(err)
	}
	if count, _, _ := unstructured.NestedString(firstRowCell(t, u, 0), "float"); count != "2" {
		t.Fatalf("precondition: the stored COUNT is %q, not the old form's 2: %v", count, u.Object["results"])
	}
	return valuesName, errorsName
}

// rewrittenErrors checks that the stored "errors" CombinedStatus is in the current wire form:
// rowErrors naming wec2 instead of errors, and a COUNT without wec2's row (its subject failed).
func rewrittenErrors(t *testing.T, c client.Client, ns, name string) error {
	u, err := getCombinedStatus(c, ns, name)
	if err != nil {
		return err
	}
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	if len(results) != 1 {
		return fmt.Errorf("results %v", results)
	}
	r := results[0].(map[string]any)
	if _, has := r["errors"]; has {
		return fmt.Errorf("still has errors: %v", r)
	}
	rowErrs, _, _ := unstructured.NestedSlice(r, "rowErrors")
	if len(rowErrs) != 1 {
		return fmt.Errorf("rowErrors %v", rowErrs)
	}
	if id, _, _ := unstructured.NestedString(rowErrs[0].(map[string]any), "wec", "clusterId"); id != "wec2" {
		return fmt.Errorf("rowErrors[0] %v, want wec.clusterId wec2", rowErrs[0])
	}
	if count, _, _ := unstructured.NestedString(firstRowCell(t, u, 0), "float"); count != "1" {
		return fmt.Errorf("count %q, want 1 (wec2's subject failed)", count)
	}
	return nil
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// setCRDSchema replaces the CombinedStatus CRD's versions with those of the CRD in file, and waits
// until the apiserver serves them: a probe object only the new schema accepts is created (dry
// run, strict field validation).
func setCRDSchema(t *testing.T, c client.Client, file string) {
	t.Helper()
	versions := replaceCRDVersions(t, c, "combinedstatuses.control.kubestellar.io", file)
	// A cell holding a field only this schema knows at results[].* tells which schema is served.
	probeField := "rowErrors"
	probeValue := any([]any{map[string]any{"wec": map[string]any{"clusterId": "x"}, "columnName": "", "error": "e"}})
	if _, ok, _ := unstructured.NestedFieldNoCopy(versions[0].(map[string]any),
		"schema", "openAPIV3Schema", "properties", "results", "items", "properties", "errors"); ok {
		probeField, probeValue = "errors", []any{map[string]any{"wec": "x", "columnName": "", "error": "e"}}
	}
	eventually(t, "CombinedStatus schema from "+filepath.Base(file)+" served", func() error {
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": controlv1alpha1.GroupVersion.String(), "kind": "CombinedStatus",
			"metadata": map[string]any{"namespace": "default", "name": "schema-probe"},
			"results":  []any{map[string]any{"name": "p", "columnNames": []any{}, probeField: probeValue}},
		}}
		return c.Create(context.Background(), probe, client.DryRunAll, client.FieldValidation("Strict"))
	})
}

// replaceCRDVersions replaces the versions (schemas, subresources, printer columns) of the
// installed CRD named crdName with those of the CRD in file, as KubeStellar's controller-manager
// does with its own at startup, and returns them.
func replaceCRDVersions(t *testing.T, c client.Client, crdName, file string) []any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var from map[string]any
	if err := yaml.Unmarshal(data, &from); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(from, "spec", "versions")
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	return versions
}

// writeOldForm stores the CombinedStatus of (d, policyName) as the earlier statusfold wrote it:
// server-side applied by its field manager, with the labels and owner it gives, and the result.
func writeOldForm(t *testing.T, c client.Client, d client.Object, policyName string, res map[string]any) string {
	t.Helper()
	var bp controlv1alpha1.BindingPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: policyName}, &bp); err != nil {
		t.Fatal(err)
	}
	name := string(d.GetUID()) + "." + string(bp.UID)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlv1alpha1.GroupVersion.String(), "kind": "CombinedStatus",
		"metadata": map[string]any{
			"namespace": d.GetNamespace(), "name": name,
			"labels": map[string]any{
				controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
				controlv1alpha1.LabelCombinedStatusNamespace: d.GetNamespace(), controlv1alpha1.LabelCombinedStatusName: d.GetName(),
				controlv1alpha1.LabelCombinedStatusBindingPolicy: policyName,
			},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": d.GetName(), "uid": string(d.GetUID())}},
		},
		"results": []any{res},
	}}
	if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(aggregator.FieldManager),
		client.ForceOwnership); err != nil {
		t.Fatalf("storing the old-form CombinedStatus: %v", err)
	}
	return name
}

func getCombinedStatus(c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("CombinedStatus"))
	return u, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// firstRowCell is cell k of the first row of the first result.
func firstRowCell(t *testing.T, u *unstructured.Unstructured, k int) map[string]any {
	t.Helper()
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	if len(results) == 0 {
		t.Fatalf("no results in %v", u.Object)
	}
	rows, _, _ := unstructured.NestedSlice(results[0].(map[string]any), "rows")
	if len(rows) == 0 {
		return nil
	}
	cols, _, _ := unstructured.NestedSlice(rows[0].(map[string]any), "columns")
	if k >= len(cols) {
		return nil
	}
	cell, _ := cols[k].(map[string]any)
	return cell
}

// TestUnchangedCellsNotRewritten: the apiserver re-encodes the plain JSON of Object and Array
// cells (sorted keys, an integer beyond int64 as the nearest double); a CombinedStatus whose
// results did not change is not written again when its object is evaluated.
func TestUnchangedCellsNotRewritten(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	startManager(t, cp, aggregator.Options{})
	ns := "stable"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "constant"}, Spec: controlv1alpha1.StatusCollectorSpec{
			Select: []controlv1alpha1.NamedExpression{{Name: "v", Def: "{'z': dyn(18446744073709551615u), 'a': dyn([dyn('<&>'), dyn(0.1), dyn(2.0)])}"}}}},
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: controlv1alpha1.StatusCollectorSpec{
			Select: []controlv1alpha1.NamedExpression{{Name: "n", Def: "returned.status.n"}}}},
		policy("constant", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("constant"))),
		policy("changing", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, collectors("n"))),
	)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"n": int64(1)}, applied(d.Generation))
	expectResult(t, c, d, "changing", ns, "n", [][]string{{"1"}})
	// statusfold writes z as 18446744073709551615; the apiserver stores the nearest double.
	cs := expectResult(t, c, d, "constant", ns, "constant", [][]string{{`{"a":["\u003c\u0026\u003e",0.1,2],"z":18446744073709552000}`}})
	rv := cs.ResourceVersion
	cacheHoldsCombinedStatuses(t, c, d, "changing", ns)
	// Each report evaluates both pairs of the object: the changing one is applied, the constant
	// one, equal as JSON values to what the apiserver holds, must not be.
	evaluationsSettled(t, "object", objectsController) // every earlier write is counted
	before := writeCount(t)
	const reports = 5
	for n := int64(2); n < 2+reports; n++ {
		reportStatus(t, c, "wec1", deploymentRef(d), map[string]any{"n": n})
		expectResult(t, c, d, "changing", ns, "n", [][]string{{fmt.Sprint(n)}})
	}
	evaluationsSettled(t, "object", objectsController) // the last change's write is counted
	// Exactly one apply per change of the changing pair. Each report changes only the WorkStatus's
	// status (reportStatus): one watch event, so one evaluation, which finds the changing pair's
	// new value unlike anything written before (one apply, whether or not the manager's cache
	// already holds the previous write) and the constant pair as the cache holds it, since before
	// the first report (cacheHoldsCombinedStatuses): no apply. (With report, a new
	// lastCurrencyUpdateTime made a second event; its evaluation could find the cache without
	// the pair's last write and apply it once more, so the count was only bounded.) Re-applying
	// the constant pair at each evaluation would add one apply per report.
	if got := writeCount(t) - before; got != reports {
		t.Errorf("%v CombinedStatus applies for %d changes of one pair, want %d: the unchanged pair was applied again", got, reports, reports)
	}
	cs, err := combinedStatus(c, d, "constant", ns)
	if err != nil {
		t.Fatal(err)
	}
	if cs.ResourceVersion != rv {
		t.Errorf("the unchanged CombinedStatus changed: resourceVersion %s → %s", rv, cs.ResourceVersion)
	}
}

// cacheHoldsCombinedStatuses makes sure that the manager's cache holds every CombinedStatus
// write made so far, and that every evaluation it started has ended: another writer labels the
// CombinedStatus of (obj, policyName), which is not statusfold's own write, so it queues obj;
// the evaluation it causes reads the label from the cache, which then holds every earlier event of
// the same watch (all CombinedStatuses), statusfold's writes included. That evaluation has nothing
// to write (an extra label is not statusfold's to remove).
func cacheHoldsCombinedStatuses(t *testing.T, c client.Client, obj client.Object, policyName, ns string) {
	t.Helper()
	cs, err := combinedStatus(c, obj, policyName, ns)
	if err != nil {
		t.Fatal(err)
	}
	evals := counter(t, "statusfold_evaluations_total", "kind", "object")
	setLabel(t, c, cs, "example.com/touched", "yes")
	awaitEvaluations(t, evals+1)
	evaluationsSettled(t, "object", objectsController)
}

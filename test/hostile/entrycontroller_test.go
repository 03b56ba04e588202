package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// countCollector is added to every BindingPolicy of the controller cases, so that a CombinedStatus
// result shows the object's evaluation ran even when the case has no collector of its own.
const countCollector = "hostile-count"

// maxControllerWECs is the number of WECs a case keeps in the controller (the corpus has cases
// with thousands, which the engines take directly).
const maxControllerWECs = 10

// endWait is how long the suite waits for a case to end in the controller before it gives up;
// the bound it checks is twice the case's limit.
const endWait = time.Minute

// controller applies the cases to the manager's controllers: the accepted collectors and
// policies, each with its own Widget and BindingPolicy, and the cases' reported statuses as
// WorkStatuses. Each must end with a result or a visible error within twice its limit, without
// growing the manager's memory by more than entryHeap, and the manager must keep running.
func (e *entryEnv) controller(t *testing.T, cases []entryCase, accepted map[string]bool) {
	ctx := context.Background()
	e.removePolicies(ctx, t, cases, accepted)
	e.create(t, &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: countCollector},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"}}}})
	for i := range maxControllerWECs {
		e.create(t, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: wecName(i), Labels: map[string]string{"name": wecName(i)}}})
		e.create(t, namespace(wecName(i)))
	}
	for _, c := range cases {
		if !c.inController || (c.object != nil && !accepted[c.Name]) || c.name == "" {
			continue
		}
		var limit, d time.Duration
		var refused bool
		_, mem := e.mgr.measured(t, e.baseline, func() { limit, d, refused = e.runInController(ctx, t, c) })
		e.controllerWorst.add(c, refused, d, mem)
		checkBounds(t, c.Name+" in the controller", d, limit, mem)
		if !e.mgr.alive() {
			t.Fatalf("%s: the manager exited", c.Name)
		}
		e.cleanup(ctx, t, c)
	}
	if e.controllerWorst.cases < minEntryCases {
		t.Errorf("%d cases in the controller, want at least %d", e.controllerWorst.cases, minEntryCases)
	}
}

func wecName(i int) string { return fmt.Sprintf("w%d", i) }

// runInController applies one case and waits for its end. It returns the case's limit, the time
// from the BindingPolicy's creation (the last write: the object is then evaluated once, with every
// input in place) to the end, and whether a WorkStatus was refused by the apiserver.
func (e *entryEnv) runInController(ctx context.Context, t *testing.T, c entryCase) (limit, d time.Duration, refused bool) {
	t.Helper()
	if c.kind == kindPolicy {
		// Alone for its kind: the policies accepted at admission are gone (removePolicies), and
		// each case deletes its own (cleanup), so this one is the Widget's rule in force.
		e.create(t, c.clusterObject())
		e.waitPolicyInForce(ctx, t, c)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)}}}
	widget.SetAPIVersion("example.io/v1")
	widget.SetKind("Widget")
	widget.SetNamespace(caseNamespace)
	widget.SetName(c.name)
	e.create(t, widget)
	collectors := []string{countCollector}
	if c.kind == kindCollector {
		collectors = append(collectors, c.name)
	}
	for j, m := range c.Collectors {
		sc := entryCase{kind: kindCollector, object: m, name: fmt.Sprintf("%s-%d", c.name, j)}
		e.create(t, sc.clusterObject())
		collectors = append(collectors, sc.name)
	}
	wecs := c.WECs
	if len(wecs) > maxControllerWECs {
		wecs = wecs[:maxControllerWECs]
	}
	multi := c.kind != kindCollector
	reported := 0
	for i, w := range wecs {
		switch err := e.report(ctx, t, c, wecName(i), w); {
		case err != nil:
			t.Logf("%s: WorkStatus of %s refused: %.300v", c.Name, wecName(i), err)
			refused = true
		case w.Status != nil || w.StatusJSON != "":
			reported++
		}
	}
	if refused && reported == 0 {
		return time.Second, 0, true // every WorkStatus refused: nothing reaches the controller
	}
	limit = collectorBudget
	if multi {
		limit += evaluationLimit
	}
	start := time.Now()
	e.create(t, bindingPolicy(c.name, max(len(wecs), 1), collectors, multi))
	var combined time.Duration
	var returned int
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, endWait, true, func(ctx context.Context) (bool, error) {
		cs, done, size := e.ended(ctx, c, collectors, multi)
		if cs && combined == 0 {
			combined = time.Since(start)
		}
		returned = size
		return done, nil
	})
	d = time.Since(start)
	if err != nil {
		t.Errorf("%s (%s): no result and no visible error in the controller after %s", c.Name, c.file, endWait)
	}
	if big := c.oversize(); big || returned > largeReturn {
		// Writing a large or deep status (returned, or copied into a CombinedStatus) is the
		// apiserver's work — server-side apply of every field — not the evaluation's: the bound
		// applies to the results of a large returned status, and not at all to a deeply nested
		// input; both times are reported. An input over the reported-status cap is bounded like
		// any other: the cap refuses it before any evaluation.
		note := fmt.Sprintf("%s: results after %s, returned status (%d KiB) after %s", c.Name,
			combined.Round(time.Millisecond), returned>>10, d.Round(time.Millisecond))
		t.Log(note)
		e.largeWrites = append(e.largeWrites, note)
		if combined > 0 { // else a Warning Event ended the case first
			d = combined
		}
		if big {
			limit = endWait / 2
		}
	}
	return limit, d, refused
}

// oversizeDepth is the nesting depth above which a reported status counts as oversize.
const oversizeDepth = 100

// oversize says whether one of the case's WECs reports a status nested deeper than oversizeDepth.
func (c entryCase) oversize() bool {
	for _, w := range c.WECs {
		raw, err := statusJSON(w)
		if err != nil {
			continue
		}
		if jsonDepth(raw) > oversizeDepth {
			return true
		}
	}
	return false
}

// jsonDepth is the deepest nesting of brackets and braces in raw, outside strings.
func jsonDepth(raw []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, b := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest
}

// waitPolicyInForce waits until the controller has compiled the case's policy (its Valid and
// InForce conditions describe the current generation); a policy it does not accept is an error,
// since the webhook accepted it, and so is one that another policy for its kind keeps out of force.
func (e *entryEnv) waitPolicyInForce(ctx context.Context, t *testing.T, c entryCase) {
	t.Helper()
	var ap policyv1alpha1.AggregationPolicy
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, endWait, true, func(ctx context.Context) (bool, error) {
		if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: c.name}, &ap); err != nil {
			return false, nil
		}
		cond, inForce := meta(ap.Status.Conditions, controlv1alpha1.ConditionValid), meta(ap.Status.Conditions, policyv1alpha1.ConditionInForce)
		return cond != nil && inForce != nil && inForce.ObservedGeneration == ap.Generation && ap.Status.ObservedGeneration == ap.Generation, nil
	})
	if err != nil {
		t.Fatalf("%s: the controller did not report on the policy: %+v", c.Name, ap.Status)
	}
	if cond := meta(ap.Status.Conditions, controlv1alpha1.ConditionValid); cond.Status != metav1.ConditionTrue {
		t.Errorf("%s: accepted at admission, not in the controller: %s", c.Name, cond.Message)
	} else if cond := meta(ap.Status.Conditions, policyv1alpha1.ConditionInForce); cond.Status != metav1.ConditionTrue {
		t.Errorf("%s: valid, not in force: %s", c.Name, cond.Message)
	}
}

func meta(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// largeReturn is the size (as JSON) above which a returned status's write is timed apart.
const largeReturn = 256 << 10

// ended says whether the case's object has its CombinedStatus result for every collector
// (results), and whether it is done: it also has, for multi-WEC return, a returned status (of
// size bytes as JSON) or an aggregate that is nothing; or a Warning Event says why something
// was not written.
func (e *entryEnv) ended(ctx context.Context, c entryCase, collectors []string, multi bool) (results, done bool, size int) {
	var css controlv1alpha1.CombinedStatusList
	if err := e.cp.Client.List(ctx, &css, client.InNamespace(caseNamespace), client.MatchingLabels{
		controlv1alpha1.LabelCombinedStatusName: c.name, controlv1alpha1.LabelCombinedStatusBindingPolicy: c.name}); err != nil {
		return false, false, 0
	}
	results = len(css.Items) == 1 && len(css.Items[0].Results) == len(collectors)
	if e.warned(ctx, c.name) {
		return results, true, 0
	}
	if !results || !multi || c.Expect.Nothing {
		return results, results, 0
	}
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.io/v1")
	widget.SetKind("Widget")
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: caseNamespace, Name: c.name}, widget); err != nil {
		return true, false, 0
	}
	if status, _, _ := unstructured.NestedFieldNoCopy(widget.Object, "status"); status != nil {
		b, _ := json.Marshal(status)
		return true, true, len(b)
	}
	return true, false, 0
}

// warned says whether a Warning Event about the case's object says why something was not written.
func (e *entryEnv) warned(ctx context.Context, name string) bool {
	var evs eventsv1.EventList
	if err := e.cp.Client.List(ctx, &evs, client.InNamespace(caseNamespace)); err != nil {
		return false
	}
	for _, ev := range evs.Items {
		if ev.Regarding.Name == name && ev.Type == "Warning" {
			return true
		}
	}
	return false
}

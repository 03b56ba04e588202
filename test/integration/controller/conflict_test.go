package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/test/framework"
)

// TestConflictNotReapplied: when another field manager owns a status field with another value,
// statusfold writes the rest once; later evaluations of the same status do not apply it again
// (each such apply would conflict again and emit another Event). A changed status is written.
func TestConflictNotReapplied(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	startManager(t, cp, aggregator.Options{})
	const ns = "conflict"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	expectReturn(t, c, d, "1", 3)
	// The other manager's write is not statusfold's own: it queues the object, whose evaluation
	// finds the same status to return (nothing to write). Awaited here, so that it is not an
	// evaluation still to come when the checks below count them.
	evals := counter(t, "statusfold_evaluations_total", "kind", "object")
	takeStatusField(t, c, d, "readyReplicas", 3)
	awaitEvaluations(t, evals+1)
	conflictsBefore := counter(t, "statusfold_status_conflicts_total", "", "")
	// Only the status changes: one WorkStatus event, one evaluation (report would make two when
	// its lastCurrencyUpdateTime moved on to the next second).
	reportStatus(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1))
	expectAvailable := func(want int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("availableReplicas %d returned, readyReplicas left to the other manager", want), func() error {
			u, err := getObject(c, d, ns, d.Name)
			if err != nil {
				return err
			}
			avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
			ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			if avail != want || ready != 3 {
				return fmt.Errorf("availableReplicas %d, readyReplicas %d", avail, ready)
			}
			return nil
		})
	}
	expectAvailable(2)
	// The conflicting apply is counted before the apply without readyReplicas is sent, so it is
	// counted by the time availableReplicas 2 shows.
	if n := counter(t, "statusfold_status_conflicts_total", "", ""); n < conflictsBefore+1 {
		t.Fatalf("statusfold_status_conflicts_total = %v, want at least %v: the conflict was not counted", n, conflictsBefore+1)
	}

	// Before the re-reports, the manager's cache must hold its own write of availableReplicas 2:
	// an evaluation that still read the Deployment as it was would apply again, whatever the
	// behaviour under test. Another writer's annotation on the Deployment is a later event of the
	// same watch, and it queues the object (it is not statusfold's own write): the evaluation it
	// causes reads the annotation, so the write before it too. That evaluation has nothing new to
	// write either. Nothing else evaluates the object meanwhile (statusfold's echo is dropped), so
	// the next evaluation is that one.
	evals = counter(t, "statusfold_evaluations_total", "kind", "object")
	annotate(t, c, d, "example.com/touched", "yes")
	awaitEvaluations(t, evals+1)
	conflicts := counter(t, "statusfold_status_conflicts_total", "", "")
	evals = counter(t, "statusfold_evaluations_total", "kind", "object")
	// The same reported state again, with a new lastCurrencyUpdateTime each time (one WorkStatus
	// event each): evaluations with nothing new to write. Each is awaited before the next report,
	// so they are three evaluations, not one that coalesced them.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 3 {
		n := counter(t, "statusfold_evaluations_total", "kind", "object")
		report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1), appliedAt(1, base.Add(time.Duration(i)*time.Second)))
		awaitEvaluations(t, n+1)
	}
	eventually(t, "the re-reports evaluated", func() error {
		if n := counter(t, "statusfold_evaluations_total", "kind", "object"); n < evals+3 {
			return fmt.Errorf("%v evaluations since, want at least 3", n-evals)
		}
		return nil
	})
	// A changed status is written (and conflicts once more on the other manager's field). It is
	// also the barrier of the check below: its WorkStatus event comes after the re-reports', and
	// the objects queue hands a key to one worker at a time, so the evaluation that writes it
	// starts after the re-reports' evaluations ended, with any apply they made counted. Its own
	// conflict is counted before availableReplicas 1 shows (see above).
	reportStatus(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, 1))
	expectAvailable(1)
	if n := counter(t, "statusfold_status_conflicts_total", "", ""); n != conflicts+1 {
		t.Errorf("%v conflicting applies for three re-reports of an unchanged status and one change, want 1 (the change's)", n-conflicts)
	}
}

// awaitEvaluations waits until statusfold_evaluations_total{kind="object"} reaches n.
func awaitEvaluations(t *testing.T, n float64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%v evaluations of workload objects", n), func() error {
		if got := counter(t, "statusfold_evaluations_total", "kind", "object"); got < n {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
}

// annotate sets an annotation on obj as another writer would (a merge patch).
func annotate(t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

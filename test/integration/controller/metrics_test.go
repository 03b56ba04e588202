package controller

import (
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The managers the tests start in-process register statusfold's metrics, the work queues' and
// controller-runtime's in controller-runtime's registry: the readers below gather it.

// counter reads a counter of controller-runtime's registry (statusfold's metrics are there) with
// the given label value (label "" : no label).
func counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || hasLabel(m, label, value) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// counterSum is the sum of a counter's series that have the given label value (e.g. every result
// of one controller's controller_runtime_reconcile_total).
func counterSum(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, label, value) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// writeCount is the manager's statusfold_writes_total{what="combinedstatus",op="apply"}.
func writeCount(t *testing.T) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "statusfold_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, "what", "combinedstatus") && hasLabel(m, "op", "apply") {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The controllers of statusfold's reconciler, with the kind of work item whose evaluations
// statusfold_evaluations_total counts for each.
const (
	objectsController = "statusfold_objects" // kind "object"
	kindsController   = "statusfold_kinds"   // kind "kind"
)

// evaluationsSettled waits until every evaluation of evalKind that has started has ended:
// statusfold_evaluations_total{kind} counts an evaluation as it starts, and controller-runtime's
// controller_runtime_reconcile_total{controller} (all results) once the evaluation has returned.
// The writes an evaluation makes are counted (statusfold_writes_total, statusfold_status_conflicts_total)
// before it returns, so once the two are equal every write of an evaluation that ran is counted.
// (Both are process-wide; managers stopped earlier in the process ended every evaluation they
// started, so they agree on those too.)
func evaluationsSettled(t *testing.T, evalKind, controller string) {
	t.Helper()
	eventually(t, fmt.Sprintf("every started evaluation of kind %s ended", evalKind), func() error {
		started := counter(t, "statusfold_evaluations_total", "kind", evalKind)
		ended := counterSum(t, "controller_runtime_reconcile_total", "controller", controller)
		if started != ended {
			return fmt.Errorf("%v evaluations started, %v ended", started, ended)
		}
		return nil
	})
}

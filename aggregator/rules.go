package aggregator

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The rules of internal/rules that `statusfold status`, the local mode and the tests use,
// under their names in this package.

// FieldManager is the server-side apply field manager of every statusfold write.
const FieldManager = rules.FieldManager

// LabelExecutingCount is the label that holds |Q| while a status return is requested
// (docs/rules.md "Status return").
const LabelExecutingCount = rules.LabelExecutingCount

// KubeStellar's labels on a workload object whose `.status` holds a returned status
// (docs/rules.md "Wire format"), with the value "true"; see rules.LabelSingletonStatus.
const (
	LabelSingletonStatus = rules.LabelSingletonStatus
	LabelMultiWECStatus  = rules.LabelMultiWECStatus
)

// ObjectKey identifies a workload object independently of the API version it is read through.
type ObjectKey = rules.ObjectKey

// BoundObject is one object of a Binding, with its combined modulation.
type BoundObject = rules.BoundObject

// BoundObjects lists the objects of a Binding.
func BoundObjects(spec *controlv1alpha1.BindingSpec) []BoundObject { return rules.BoundObjects(spec) }

// BoundIn returns the object's entry in a Binding, and whether the Binding lists the object.
func BoundIn(spec *controlv1alpha1.BindingSpec, key ObjectKey) (BoundObject, bool) {
	return rules.BoundIn(spec, key)
}

// Destinations are the WECs a Binding sends its objects to: sorted, each once.
func Destinations(spec *controlv1alpha1.BindingSpec) []string { return rules.Destinations(spec) }

// WorkStatusObject is the workload object a WorkStatus reports on.
func WorkStatusObject(ws *controlv1alpha1.WorkStatus) ObjectKey { return rules.WorkStatusObject(ws) }

// NewestWorkStatus returns the WorkStatus that counts among several that report one object from
// one WEC: the newest by creation, and of those created at the same time the last by name; nil
// for none.
func NewestWorkStatus(list []*controlv1alpha1.WorkStatus) *controlv1alpha1.WorkStatus {
	return rules.NewestWorkStatus(list)
}

// InventoryCluster is one inventory object (an OCM ManagedCluster): a WEC's name and labels.
type InventoryCluster = rules.InventoryCluster

// WorkloadObject is what binding resolution needs to know about one workload object.
type WorkloadObject = rules.WorkloadObject

// ResolveBinding computes the spec of the Binding of policy bp (docs/rules.md "Bindings"); see
// rules.ResolveBinding.
func ResolveBinding(bp *controlv1alpha1.BindingPolicy, clusters []InventoryCluster, objects []WorkloadObject,
	nsLabels func(namespace string) map[string]string) (controlv1alpha1.BindingSpec, field.ErrorList) {
	return rules.ResolveBinding(bp, clusters, objects, nsLabels)
}

// The status return decision (docs/rules.md "Status return"); see internal/rules.
type (
	ReturnMode     = rules.ReturnMode
	ReturnInput    = rules.ReturnInput
	ReturnDecision = rules.ReturnDecision
)

// The status return modes.
const (
	ReturnNothing   = rules.ReturnNothing
	ReturnCopy      = rules.ReturnCopy
	ReturnAggregate = rules.ReturnAggregate
	ReturnLeave     = rules.ReturnLeave
)

// DecideReturn applies the docs/rules.md "Status return" truth table.
func DecideReturn(in ReturnInput) ReturnDecision { return rules.DecideReturn(in) }

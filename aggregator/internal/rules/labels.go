package rules

import "k8s.io/apimachinery/pkg/runtime/schema"

// FieldManager is the server-side apply field manager of every statusfold write.
const FieldManager = "statusfold"

// LabelExecutingCount is the label that holds |Q| while a status return is requested (docs/rules.md "Status return").
const LabelExecutingCount = "kubestellar.io/executing-count"

// KubeStellar's labels on a workload object whose `.status` holds a returned status (docs/rules.md "Wire format"), with
// the value "true": one WEC's reported state copied, or several WECs' aggregated. statusfold writes
// them beside LabelExecutingCount, and removes them with it, as KubeStellar's status controller does.
const (
	LabelSingletonStatus = "managed-by.kubestellar.io/singletonstatus"
	LabelMultiWECStatus  = "managed-by.kubestellar.io/multiwecstatus"
)

// ReturnLabels are the labels statusfold maintains on workload objects.
var ReturnLabels = []string{LabelExecutingCount, LabelSingletonStatus, LabelMultiWECStatus}

// ClassifierName is the name of the ContentClassifier for a resource: resource.version.group,
// or resource.version for the core group (docs/rules.md "ContentClassifier").
func ClassifierName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}

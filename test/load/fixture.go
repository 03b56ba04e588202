package load

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/wecsim"
)

// WorkStatusGVR is the resource the load test writes.
var WorkStatusGVR = controlv1alpha1.GroupVersion.WithResource("workstatuses")

// SeqField is the field of a reported status that carries the load test's write sequence number:
// every write gets a new, larger number, so the largest number seen downstream tells which writes
// have been reflected. It is a field of the Deployment status schema (a field outside the schema
// would make the server-side apply of the returned status fail), and the Deployment aggregation
// combines it by maximum, so the aggregate shows the newest write too.
const SeqField = "collisionCount"

// statusEpoch is the time that sequence numbers count seconds from in condition timestamps, so
// that a newer write always has a later timestamp.
var statusEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WECName is the name of the i-th simulated WEC (and its mailbox namespace).
func WECName(i int) string { return fmt.Sprintf("wec-%04d", i) }

// ObjectName is the name of the j-th workload object.
func ObjectName(j int) string { return fmt.Sprintf("app-%04d", j) }

// DeploymentStatus is a Deployment-shaped reported status of about 700 bytes of JSON, like the
// WEC-side agent copies from a real Deployment. seq is the write's sequence number; it goes into
// SeqField, and into the Progressing condition's timestamps and message.
func DeploymentStatus(name string, seq int64, replicas, ready int64) map[string]any {
	ts := statusEpoch.Add(time.Duration(seq) * time.Second).Format(time.RFC3339)
	avail := "True"
	availReason := "MinimumReplicasAvailable"
	if ready < replicas {
		avail, availReason = "False", "MinimumReplicasUnavailable"
	}
	return map[string]any{
		"observedGeneration": int64(1),
		"replicas":           replicas,
		"updatedReplicas":    replicas,
		"readyReplicas":      ready,
		"availableReplicas":  ready,
		SeqField:             seq,
		"conditions": []any{
			map[string]any{
				"type": "Available", "status": avail, "reason": availReason,
				"message":        "Deployment has minimum availability.",
				"lastUpdateTime": statusEpoch.Format(time.RFC3339), "lastTransitionTime": statusEpoch.Format(time.RFC3339),
			},
			map[string]any{
				"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
				"message":        fmt.Sprintf("ReplicaSet %q has successfully progressed (write %d).", name+"-5d8f7c9b4", seq),
				"lastUpdateTime": ts, "lastTransitionTime": ts,
			},
		},
	}
}

// WorkStatus returns a WorkStatus for the Deployment objNamespace/objName in WEC wec, named as the
// WEC-side agent names it, without status (the status subresource ignores it on create).
func WorkStatus(wdsName, wec, objNamespace, objName string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"sourceRef": map[string]any{
			"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment",
			"namespace": objNamespace, "name": objName,
		}},
		"statusDetails": map[string]any{
			"lastGeneration": int64(1), "lastGenerationIsApplied": true,
			"lastCurrencyUpdateTime": statusEpoch.Format(time.RFC3339), "wecGeneration": int64(1),
		},
	}}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("WorkStatus"))
	u.SetNamespace(wec)
	u.SetName(wecsim.WorkStatusName("apps", "v1", "Deployment", objNamespace, objName))
	u.SetLabels(map[string]string{controlv1alpha1.LabelOriginWDSName: wdsName})
	return u
}

// SeqOf returns the sequence number in an object's status, and whether there is one.
func SeqOf(obj map[string]any) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, "status", SeqField)
	if !found || err != nil {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// namespaceObject is a Namespace as unstructured, for the dynamic client.
func namespaceObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	u.SetName(name)
	return u
}

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// CombinedStatusBody is a CombinedStatus shaped like the load test's: the four collectors'
// results, selectRows rows of the select (20 is its default limit; the load test's shape); seq goes into the
// marker. TestAPIServerWriteCost and test/integration's TestCombinedStatusWriteCostByShape write it.
func CombinedStatusBody(namespace, name string, selectRows, seq int) *unstructured.Unstructured {
	num := func(v int) map[string]any { return map[string]any{"type": "Number", "float": strconv.Itoa(v)} }
	row := func(cols ...any) map[string]any { return map[string]any{"columns": cols} }
	var sel []any
	for i := range selectRows {
		sel = append(sel, row(map[string]any{"type": "String", "string": WECName(i)}, num(i%3)))
	}
	u := &unstructured.Unstructured{Object: map[string]any{"results": []any{
		map[string]any{"name": "load-count", "columnNames": []any{"count"}, "rows": []any{row(num(1000))}},
		map[string]any{"name": "load-histogram", "columnNames": []any{"ready", "count"},
			"rows": []any{row(num(0), num(250)), row(num(1), num(250)), row(num(2), num(250)), row(num(3), num(250))}},
		map[string]any{"name": "load-not-ready", "columnNames": []any{"wec", "ready"}, "rows": sel},
		map[string]any{"name": MarkerCollector, "columnNames": []any{"seq"}, "rows": []any{row(num(seq))}},
	}}}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("CombinedStatus"))
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(map[string]string{
		controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
		controlv1alpha1.LabelCombinedStatusNamespace: namespace, controlv1alpha1.LabelCombinedStatusName: name,
		controlv1alpha1.LabelCombinedStatusBindingPolicy: BindingPolicy,
	})
	return u
}

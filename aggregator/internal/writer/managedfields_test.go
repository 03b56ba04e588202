package writer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// withManagedFields is an object with one managed-fields entry of manager, as the apiserver
// writes it (FieldsV1 JSON).
func withManagedFields(manager, subresource string, op metav1.ManagedFieldsOperationType, fieldsV1 string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Subresource: subresource, Operation: op,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fieldsV1)}}})
	return u
}

func TestOwns(t *testing.T) {
	const labels = `{"f:metadata":{"f:labels":{"f:kubestellar.io/executing-count":{},"f:managed-by.kubestellar.io/singletonstatus":{}}}}`
	const status = `{"f:status":{".":{},"f:readyReplicas":{},"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:status":{}}}}}`
	apply := metav1.ManagedFieldsOperationApply
	cases := []struct {
		name        string
		obj         *unstructured.Unstructured
		subresource string
		path        []string
		want        bool
	}{
		{"a label owned", withManagedFields(rules.FieldManager, "", apply, labels), "", []string{"metadata", "labels", "kubestellar.io/executing-count"}, true},
		{"another label", withManagedFields(rules.FieldManager, "", apply, labels), "", []string{"metadata", "labels", "managed-by.kubestellar.io/multiwecstatus"}, false},
		{"labels, some owned", withManagedFields(rules.FieldManager, "", apply, labels), "", []string{"metadata", "labels"}, true},
		{"status on its subresource", withManagedFields(rules.FieldManager, "status", apply, status), "status", []string{"status"}, true},
		{"status asked of the main resource", withManagedFields(rules.FieldManager, "status", apply, status), "", []string{"status"}, false},
		{"status owned only below", withManagedFields(rules.FieldManager, "status", apply, `{"f:status":{"f:replicas":{}}}`), "status", []string{"status"}, true},
		{"another manager's entry", withManagedFields("kube-controller-manager", "status", apply, status), "status", []string{"status"}, false},
		{"an update, not an apply", withManagedFields(rules.FieldManager, "status", metav1.ManagedFieldsOperationUpdate, status), "status", []string{"status"}, false},
		{"unreadable entry", withManagedFields(rules.FieldManager, "status", apply, `{"f:status":`), "status", []string{"status"}, false},
		{"no entry", &unstructured.Unstructured{Object: map[string]any{}}, "", []string{"status"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Owns(Owned(c.obj, c.subresource), c.path...); got != c.want {
				t.Errorf("Owns(%v) = %v, want %v", c.path, got, c.want)
			}
		})
	}
}

package writer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// TestAppliedBy: only a server-side apply entry of statusfold's field manager counts.
func TestAppliedBy(t *testing.T) {
	for _, tc := range []struct {
		name string
		mf   []metav1.ManagedFieldsEntry
		want bool
	}{
		{"none", nil, false},
		{"another manager", []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}, false},
		{"statusfold update", []metav1.ManagedFieldsEntry{{Manager: rules.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate}}, false},
		{"statusfold apply", []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}, {Manager: rules.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"}}, true},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetManagedFields(tc.mf)
		if got := AppliedBy(u, rules.FieldManager); got != tc.want {
			t.Errorf("%s: appliedBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

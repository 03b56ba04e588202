package itscache

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestTrimITSObjectKeepsTheWorkStatusLastWrite: the managed fields go, their newest time stays
// readable (LastWrite).
func TestTrimITSObjectKeepsTheWorkStatusLastWrite(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(min int) *metav1.Time {
		v := metav1.NewTime(created.Add(time.Duration(min) * time.Minute))
		return &v
	}
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}
	cases := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    time.Time // LastWrite
	}{
		{"none: the creation time", nil, created},
		{"newest of several",
			[]metav1.ManagedFieldsEntry{{Manager: "agent", Time: at(5), FieldsV1: fields}, {Manager: "other", Time: at(9), FieldsV1: fields}, {Manager: "x", Time: at(1)}},
			at(9).Time},
		{"no times: the creation time", []metav1.ManagedFieldsEntry{{Manager: "agent", FieldsV1: fields}}, created},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created), ManagedFields: tc.managed}}
			if before := LastWrite(ws); !before.Equal(tc.want) {
				t.Fatalf("LastWrite before the transform = %s, want %s", before, tc.want)
			}
			out, err := TrimITSObject(ws)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*controlv1alpha1.WorkStatus)
			if got.ManagedFields != nil {
				t.Errorf("managedFields = %+v after the transform, want none", got.ManagedFields)
			}
			if after := LastWrite(got); !after.Equal(tc.want) {
				t.Errorf("LastWrite after the transform = %s, want %s", after, tc.want)
			}
		})
	}
	// No time at all stays the zero time (not the Unix epoch).
	noTimes := &controlv1alpha1.WorkStatus{}
	if _, err := TrimITSObject(noTimes); err != nil {
		t.Fatal(err)
	}
	if got := LastWrite(noTimes); !got.IsZero() {
		t.Errorf("LastWrite of a WorkStatus without times, transformed = %s, want the zero time", got)
	}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: fields}}}}
	out, err := TrimITSObject(mc)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*clusterv1.ManagedCluster); got.ManagedFields != nil || got.Labels["a"] != "b" {
		t.Errorf("ManagedCluster after the transform: managedFields %+v, labels %v; want none and a=b", got.ManagedFields, got.Labels)
	}
}

package aggregator

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestTrimITSObjectKeepsTheWorkStatusLastWrite: the managed fields go, their newest time stays
// readable (lastWrite).
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
		want    time.Time // lastWrite
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
			if before := lastWrite(ws); !before.Equal(tc.want) {
				t.Fatalf("lastWrite before the transform = %s, want %s", before, tc.want)
			}
			out, err := trimITSObject(ws)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*controlv1alpha1.WorkStatus)
			if got.ManagedFields != nil {
				t.Errorf("managedFields = %+v after the transform, want none", got.ManagedFields)
			}
			if after := lastWrite(got); !after.Equal(tc.want) {
				t.Errorf("lastWrite after the transform = %s, want %s", after, tc.want)
			}
		})
	}
	// No time at all stays the zero time (not the Unix epoch).
	noTimes := &controlv1alpha1.WorkStatus{}
	if _, err := trimITSObject(noTimes); err != nil {
		t.Fatal(err)
	}
	if got := lastWrite(noTimes); !got.IsZero() {
		t.Errorf("lastWrite of a WorkStatus without times, transformed = %s, want the zero time", got)
	}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: fields}}}}
	out, err := trimITSObject(mc)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*clusterv1.ManagedCluster); got.ManagedFields != nil || got.Labels["a"] != "b" {
		t.Errorf("ManagedCluster after the transform: managedFields %+v, labels %v; want none and a=b", got.ManagedFields, got.Labels)
	}
}

func TestReportCacheIsKeyedByVersions(t *testing.T) {
	c := newReportCache()
	ws := func(uid, rv string) *controlv1alpha1.WorkStatus {
		return &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	stored := report{status: map[string]any{"ready": true}}
	c.put(ws("u1", "10"), "c1", stored)
	cases := []struct {
		name     string
		ws       *controlv1alpha1.WorkStatus
		prunerRV string
		hit      bool
	}{
		{"same versions", ws("u1", "10"), "c1", true},
		{"new WorkStatus version", ws("u1", "11"), "c1", false},
		{"new classifier version", ws("u1", "10"), "c2", false},
		{"another WorkStatus", ws("u2", "10"), "c1", false},
		{"no WorkStatus", nil, "c1", false},
	}
	for _, tc := range cases {
		got, ok := c.get(tc.ws, tc.prunerRV)
		if ok != tc.hit {
			t.Errorf("%s: hit = %v, want %v", tc.name, ok, tc.hit)
		}
		if ok && got.status.(map[string]any)["ready"] != true {
			t.Errorf("%s: report = %+v, want %+v", tc.name, got, stored)
		}
	}
	c.put(nil, "c1", stored)
	if n := c.len(); n != 1 {
		t.Errorf("entries = %d after putting a nil WorkStatus, want 1", n)
	}
	c.forget(types.UID("u1"))
	if _, ok := c.get(ws("u1", "10"), "c1"); ok || c.len() != 0 {
		t.Errorf("entry still there after forget (len %d)", c.len())
	}
}

package aggregator

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

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
		want    []metav1.ManagedFieldsEntry
	}{
		{"none", nil, nil},
		{"newest of several, without field sets",
			[]metav1.ManagedFieldsEntry{{Manager: "agent", Time: at(5), FieldsV1: fields}, {Manager: "other", Time: at(9), FieldsV1: fields}, {Manager: "x", Time: at(1)}},
			[]metav1.ManagedFieldsEntry{{Time: at(9)}}},
		{"no times", []metav1.ManagedFieldsEntry{{Manager: "agent", FieldsV1: fields}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created), ManagedFields: tc.managed}}
			before := lastWrite(ws)
			out, err := trimITSObject(ws)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*controlv1alpha1.WorkStatus)
			if len(got.ManagedFields) != len(tc.want) {
				t.Fatalf("managedFields = %+v, want %+v", got.ManagedFields, tc.want)
			}
			for i := range tc.want {
				if got.ManagedFields[i].FieldsV1 != nil || got.ManagedFields[i].Manager != "" || !got.ManagedFields[i].Time.Equal(tc.want[i].Time) {
					t.Errorf("managedFields[%d] = %+v, want %+v", i, got.ManagedFields[i], tc.want[i])
				}
			}
			if after := lastWrite(got); !after.Equal(before) {
				t.Errorf("lastWrite = %s after the transform, %s before", after, before)
			}
		})
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

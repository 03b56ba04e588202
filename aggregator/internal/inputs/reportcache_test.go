package inputs

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func TestReportCacheIsKeyedByVersions(t *testing.T) {
	c := NewReportCache()
	ws := func(uid, rv string) *controlv1alpha1.WorkStatus {
		return &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	stored := Report{Status: map[string]any{"ready": true}}
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
		if ok && got.Status.(map[string]any)["ready"] != true {
			t.Errorf("%s: report = %+v, want %+v", tc.name, got, stored)
		}
	}
	c.put(nil, "c1", stored)
	if n := c.len(); n != 1 {
		t.Errorf("entries = %d after putting a nil WorkStatus, want 1", n)
	}
	c.Forget(types.UID("u1"))
	if _, ok := c.get(ws("u1", "10"), "c1"); ok || c.len() != 0 {
		t.Errorf("entry still there after forget (len %d)", c.len())
	}
}

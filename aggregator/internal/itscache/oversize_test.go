package itscache

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// statusOfSize is a status object whose JSON is exactly n bytes (n ≥ 10).
func statusOfSize(n int) []byte {
	const head, tail = `{"a":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// TestTransformCapsTheReportedStatus pins the cap on a reported status: at the cap the status is
// decoded as usual; one byte over it, or far over it, it is not decoded, the cache keeps no copy of
// it, and reading it returns an OversizeError with the exact text of the WEC's row error.
func TestTransformCapsTheReportedStatus(t *testing.T) {
	const limit = 1000
	cases := []struct {
		name     string
		size     int
		oversize bool
	}{
		{"at the cap", limit, false},
		{"just over the cap", limit + 1, true},
		{"far over the cap", 100 * limit, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "ws"}}
			ws.Status.Raw = statusOfSize(tc.size)
			if len(ws.Status.Raw) != tc.size {
				t.Fatalf("status of %d bytes, want %d", len(ws.Status.Raw), tc.size)
			}
			if _, err := (Transform{MaxStatusBytes: limit}).Trim(ws); err != nil {
				t.Fatal(err)
			}
			if ws.Status.Raw != nil {
				t.Errorf("the raw status is kept (%d bytes)", len(ws.Status.Raw))
			}
			got, err := WorkStatusStatus(ws)
			e := Oversize(ws)
			if !tc.oversize {
				if err != nil || e != nil || got == nil {
					t.Fatalf("status %v, error %v, oversize %v: want the decoded status", got, err, e)
				}
				return
			}
			var asErr *OversizeError
			if got != nil || !errors.As(err, &asErr) || e == nil || *e != (OversizeError{Size: tc.size, Max: limit}) {
				t.Fatalf("status %v, error %v, oversize %+v: want an OversizeError of %d bytes", got, err, e, tc.size)
			}
			want := "status not evaluated: the reported status is " + strconv.Itoa(tc.size) +
				" bytes, over the cap of 1000 bytes on a reported status"
			if e.Error() != want {
				t.Errorf("error text %q, want %q", e.Error(), want)
			}
		})
	}
	// No cap: any size is decoded.
	ws := &controlv1alpha1.WorkStatus{}
	ws.Status.Raw = statusOfSize(100 * limit)
	_, _ = TrimITSObject(ws)
	if Oversize(ws) != nil {
		t.Error("TrimITSObject (no cap) refused a large status")
	}
}

package itscache

import (
	"testing"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestTransformPanicRecovered: an object that makes the transform panic (here a nil WorkStatus) is
// handed back as it came, with no error, instead of the panic ending the process.
func TestTransformPanicRecovered(t *testing.T) {
	var ws *controlv1alpha1.WorkStatus
	out, err := TrimITSObject(ws)
	if err != nil {
		t.Fatalf("error %v, want none", err)
	}
	if got, ok := out.(*controlv1alpha1.WorkStatus); !ok || got != ws {
		t.Errorf("got %#v, want the object as it came", out)
	}
}

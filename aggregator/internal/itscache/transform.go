package itscache

import (
	"fmt"
	"runtime/debug"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TrimITSObject is the ITS cache's transform. Of a WorkStatus it drops the managed fields, which
// statusfold does not read there, except the newest write time (LastWrite), kept beside the
// decoded status; it decodes the reported status once, in place of the raw JSON, and interns
// the strings that repeat across WorkStatuses (cachedstatus.go). Of other objects it drops the
// managed fields. Smaller cached objects are cheaper to hold, list and copy. It writes nothing to
// a WorkStatus it already transformed (client-go may hand it one again).
//
// A panic while transforming is recovered instead of ending the process (the informer runs the
// transform on its own goroutine, outside any reconcile): it is logged with its stack and the
// object is cached as it came; its status is then decoded when an evaluation reads it, where a
// failure is that evaluation's error, reported and retried.
func TrimITSObject(in any) (out any, err error) { return Transform{}.Trim(in) }

// Transform is the ITS cache's transform (TrimITSObject) with its settings.
type Transform struct {
	// MaxStatusBytes caps the size of a WorkStatus's reported status, as its JSON (0: no cap). A
	// status over the cap is not decoded: the cache keeps its size only, and reading it returns
	// an *OversizeError (docs/rules.md "Reported status size").
	MaxStatusBytes int
}

// Trim is TrimITSObject with t's settings.
func (t Transform) Trim(in any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			utilruntime.HandleError(fmt.Errorf("recovered from a panic transforming a %T for the ITS cache; cached as it came: %v\n%s",
				in, p, debug.Stack()))
			out, err = in, nil
		}
	}()
	switch o := in.(type) {
	case *controlv1alpha1.WorkStatus:
		if Transformed(o) {
			return o, nil // cache readers may hold it: no writes
		}
		decodeCachedStatus(o, t.MaxStatusBytes) // first: it keeps the newest write time of the managed fields
		dropManagedFields(o)
		internMeta(o)
		return o, nil
	case client.Object:
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
		return o, nil
	}
	return in, nil
}

package pacing

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WriteKind is the kind of a paced write; each kind has its own latency floor and EWMA.
type WriteKind uint8

const (
	// WriteCombinedStatus: a CombinedStatus apply or delete.
	WriteCombinedStatus WriteKind = iota
	// WriteReturnedStatus: the status and labels returned to a workload object.
	WriteReturnedStatus
	WriteKinds
)

// String is the kind's label value in statusfold_write_duration_seconds.
func (k WriteKind) String() string {
	if k >= WriteKinds {
		return "unknown"
	}
	return [...]string{"combinedstatus", "status"}[k]
}

// WriteOutcome is what a write's result says about the apiserver's load.
type WriteOutcome uint8

const (
	// WriteSucceeded: its latency is a sample of the apiserver's load.
	WriteSucceeded WriteOutcome = iota
	// WriteOverloaded: refused or timed out for want of capacity (429, 503, 504, a timeout).
	WriteOverloaded
	// WriteFailed: any other error (invalid, conflict, forbidden, 500): says nothing about load.
	WriteFailed
)

// OutcomeOf classifies a write's error. HTTP 500 is not counted as overload: the apiserver
// returns it for content it cannot handle (e.g. "field not declared in schema" on a server-side
// apply), which a slower pace would not cure.
func OutcomeOf(err error) WriteOutcome {
	var ne net.Error
	switch {
	case err == nil:
		return WriteSucceeded
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return WriteOverloaded
	}
	return WriteFailed
}

package resources

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Why a resource is not read (docs/security.md, "Reads").
const (
	// ReasonNotOptedIn: a resource statusfold never watches or caches unless told to (Secrets:
	// aggregator.Options.WatchSecrets).
	ReasonNotOptedIn = "NotOptedIn"
	// ReasonForbidden: the manager's identity may not list the resource (RBAC).
	ReasonForbidden = "Forbidden"
)

// Secrets is the resource statusfold watches only when opted in.
var Secrets = schema.GroupResource{Resource: "secrets"}

// NotReadableError says that the informer of a resource was not started, and why (Reason).
type NotReadableError struct {
	GR     schema.GroupResource
	Reason string
	Err    error // the apiserver's answer, for ReasonForbidden
}

func (e *NotReadableError) Error() string {
	switch e.Reason {
	case ReasonNotOptedIn:
		return fmt.Sprintf("%s are not watched: statusfold reads them only when opted in (manager flag --watch-secrets, chart value watchSecrets)", e.GR)
	default:
		return fmt.Sprintf("%s may not be listed by statusfold's identity: %v", e.GR, e.Err)
	}
}

// IsNotReadable returns the NotReadableError in err's chain, if any.
func IsNotReadable(err error) (*NotReadableError, bool) {
	var nr *NotReadableError
	ok := errors.As(err, &nr)
	return nr, ok
}

// Access decides which resources the Watcher may start informers for.
type Access struct {
	// WatchSecrets opts Secrets in; without it they are never watched or cached.
	WatchSecrets bool
	// Probe, when set, lists at most one object of a resource with the manager's identity
	// before its informer starts; a Forbidden answer keeps the informer from starting (an
	// informer would retry the list forever). Other errors are left to the informer.
	Probe func(ctx context.Context, info ResourceInfo) error
}

// check returns a NotReadableError when info's informer must not start, else nil.
func (a Access) check(ctx context.Context, info ResourceInfo) error {
	gr := info.GVR.GroupResource()
	if gr == Secrets && !a.WatchSecrets {
		return &NotReadableError{GR: gr, Reason: ReasonNotOptedIn}
	}
	if a.Probe == nil {
		return nil
	}
	if err := a.Probe(ctx, info); apierrors.IsForbidden(err) {
		return &NotReadableError{GR: gr, Reason: ReasonForbidden, Err: err}
	}
	return nil
}

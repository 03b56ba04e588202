package resources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// ReasonUnauthorized: the apiserver no longer accepts the manager's credentials.
	ReasonUnauthorized = "Unauthorized"
)

// Secrets is the resource statusfold watches only when opted in.
var Secrets = schema.GroupResource{Resource: "secrets"}

// NotReadableError says that the informer of a resource was not started, and why (Reason).
type NotReadableError struct {
	GR     schema.GroupResource
	Reason string
	Err    error // the apiserver's answer, for ReasonForbidden
	// Namespaces are the namespaces whose list was Forbidden, for an informer of single
	// namespaces; none: the cluster-wide list was.
	Namespaces []string
	// Since is when a running informer lost read access (Revocations); zero: its informer was
	// not started.
	Since time.Time
}

func (e *NotReadableError) Error() string {
	if e.Reason == ReasonNotOptedIn {
		return fmt.Sprintf("%s are not watched: statusfold reads them only when opted in (manager flag --watch-secrets, chart value watchSecrets)", e.GR)
	}
	where := ""
	switch len(e.Namespaces) {
	case 0:
	case 1:
		where = " in namespace " + e.Namespaces[0]
	default:
		where = " in namespaces " + strings.Join(e.Namespaces, ", ")
	}
	if !e.Since.IsZero() {
		return fmt.Sprintf("%s may no longer be read by statusfold's identity%s: %v; what statusfold sees of them is frozen since %s",
			e.GR, where, e.Err, e.Since.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s may not be listed by statusfold's identity%s: %v", e.GR, where, e.Err)
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
	// before its informer starts: in the namespace of an informer of a single namespace, so
	// that a Role there suffices; cluster-wide ("") for a cluster-wide informer. A Forbidden
	// answer keeps the informer from starting (an informer would retry the list forever).
	// Other errors are left to the informer.
	Probe func(ctx context.Context, info ResourceInfo, namespace string) error
}

// check returns a NotReadableError when an informer of info may not start: cluster-wide when
// all, else in the namespaces it names (Namespaces; the others may start); nil when every
// informer may. Nothing is probed when all is false and namespaces is empty.
func (a Access) check(ctx context.Context, info ResourceInfo, all bool, namespaces []string) *NotReadableError {
	gr := info.GVR.GroupResource()
	if gr == Secrets && !a.WatchSecrets {
		return &NotReadableError{GR: gr, Reason: ReasonNotOptedIn}
	}
	if a.Probe == nil {
		return nil
	}
	if all {
		if err := a.Probe(ctx, info, ""); apierrors.IsForbidden(err) {
			return &NotReadableError{GR: gr, Reason: ReasonForbidden, Err: err}
		}
		return nil
	}
	var denied []string
	var first error
	for _, ns := range namespaces {
		if err := a.Probe(ctx, info, ns); apierrors.IsForbidden(err) {
			denied, first = append(denied, ns), cmp.Or(first, err)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return &NotReadableError{GR: gr, Reason: ReasonForbidden, Err: first, Namespaces: denied}
}

package pacing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOutcomeOf(t *testing.T) {
	gr := schema.GroupResource{Group: "control.kubestellar.io", Resource: "combinedstatuses"}
	for _, tc := range []struct {
		err  error
		want WriteOutcome
	}{
		{nil, WriteSucceeded},
		{apierrors.NewTooManyRequests("slow down", 1), WriteOverloaded},
		{apierrors.NewServiceUnavailable("unavailable"), WriteOverloaded},
		{apierrors.NewServerTimeout(gr, "apply", 1), WriteOverloaded},
		{apierrors.NewTimeoutError("timeout", 1), WriteOverloaded},
		{fmt.Errorf("apply: %w", context.DeadlineExceeded), WriteOverloaded},
		{apierrors.NewInternalError(errors.New("field not declared in schema")), WriteFailed},
		{apierrors.NewConflict(gr, "x", errors.New("conflict")), WriteFailed},
		{apierrors.NewGenericServerResponse(http.StatusBadGateway, "apply", gr, "x", "", 0, false), WriteFailed},
		{errors.New("connection refused"), WriteFailed},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

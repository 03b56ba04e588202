package offline

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	admissionerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
)

// Message is what `kubectl apply` prints for an error of Server.Apply or Admission, without
// kubectl's framing: an Invalid error as kubectl renders it (`The KIND "NAME" is invalid:
// FIELD: PROBLEM`, or one `* FIELD: PROBLEM` line per distinct cause); any other apiserver
// error's message, which kubectl prints after `Error from server (REASON): error when creating
// "FILE": `; for a *ClientError, the cause, which kubectl prints after its own
// `error: ... "FILE": `.
//
// The rendering of an Invalid error follows kubectl's printer (checkErr in
// k8s.io/kubectl/pkg/cmd/util), which is not imported: that package brings kustomize and the
// rest of kubectl's command line into the binary. TestOfflineParity (test/integration/admission)
// holds the two equal, against kubectl's printer and against the kubectl binary.
func Message(err error) string {
	var ce *ClientError
	if errors.As(err, &ce) {
		return ce.Cause.Error()
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	st := status.Status()
	if st.Reason != metav1.StatusReasonInvalid {
		return st.Message
	}
	s := "The request is invalid"
	if st.Details == nil {
		if st.Message != "" {
			s += ": " + st.Message
		}
		return s
	}
	if st.Details.Kind != "" || st.Details.Name != "" {
		s = fmt.Sprintf("The %s %q is invalid", st.Details.Kind, st.Details.Name)
	} else if st.Message != "" && len(st.Details.Causes) == 0 {
		s += ": " + st.Message
	}
	// Each "FIELD: MESSAGE" once, in the apiserver's order.
	var causes []string
	seen := sets.New[string]()
	for _, c := range st.Details.Causes {
		msg := fmt.Sprintf("%s: %s", c.Field, c.Message)
		if !seen.Has(msg) {
			seen.Insert(msg)
			causes = append(causes, msg)
		}
	}
	switch len(causes) {
	case 0:
		return s
	case 1:
		return s + ": " + causes[0]
	default:
		return s + ": \n* " + strings.Join(causes, "\n* ")
	}
}

// WebhookDenial is the error the apiserver returns when the validating webhook named webhook
// rejects an object of kind gk with errs: the webhook answers with an Invalid status
// (apierrors.NewInvalid), which the apiserver passes on with its message prefixed
// (admission/plugin/webhook/errors.ToStatusErr).
func WebhookDenial(webhook string, gk schema.GroupKind, name string, errs field.ErrorList) error {
	status := apierrors.NewInvalid(gk, name, errs).Status()
	return admissionerrors.ToStatusErr(webhook, &status)
}

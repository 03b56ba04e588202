package offline

import (
	"errors"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	admissionerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// kubectlMu serializes KubectlMessage: kubectl's error printer reports through a package-level
// handler.
var kubectlMu sync.Mutex

// KubectlMessage is what `kubectl apply -f SOURCE` prints, without the trailing newline, when
// the creation of an object read from source fails with err: kubectl's own printer
// (k8s.io/kubectl/pkg/cmd/util.CheckErr, after AddSourceToErr("creating", ...) for the
// apiserver's errors; a *ClientError already names its source). An Invalid error prints as `The KIND "NAME" is invalid: FIELD: PROBLEM`, or with one
// `* FIELD: PROBLEM` line per distinct cause; any other API error as
// `Error from server (REASON): error when creating "SOURCE": MESSAGE`.
func KubectlMessage(err error, source string) string {
	if err == nil {
		return ""
	}
	var ce *ClientError
	if !errors.As(err, &ce) {
		err = cmdutil.AddSourceToErr("creating", source, err)
	}
	kubectlMu.Lock()
	defer kubectlMu.Unlock()
	var msg string
	cmdutil.BehaviorOnFatal(func(m string, _ int) { msg = m })
	defer cmdutil.DefaultBehaviorOnFatal()
	cmdutil.CheckErr(err)
	return strings.TrimSuffix(msg, "\n")
}

// Message is the part of KubectlMessage that is the apiserver's: kubectl's rendering of an
// Invalid error, and the apiserver's status message of any other (without kubectl's
// `Error from server (REASON): error when creating "SOURCE": `); for a *ClientError, its cause.
func Message(err error) string {
	var ce *ClientError
	if errors.As(err, &ce) {
		return ce.Cause.Error()
	}
	var status apierrors.APIStatus
	if apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return KubectlMessage(err, "")
	}
	return status.Status().Message
}

// WebhookDenial is the error the apiserver returns when the validating webhook named webhook
// rejects an object of kind gk with errs: the webhook answers with an Invalid status
// (apierrors.NewInvalid), which the apiserver passes on with its message prefixed
// (admission/plugin/webhook/errors.ToStatusErr).
func WebhookDenial(webhook string, gk schema.GroupKind, name string, errs field.ErrorList) error {
	status := apierrors.NewInvalid(gk, name, errs).Status()
	return admissionerrors.ToStatusErr(webhook, &status)
}

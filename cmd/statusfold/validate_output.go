package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/webhooks/offline"
)

// resultErrors lists an apiserver error's field errors (the causes of an Invalid error), or the
// error itself with its reason as the type.
func resultErrors(err error) []resultError {
	var ce *offline.ClientError
	if errors.As(err, &ce) { // kubectl stops before it sends the object
		return []resultError{{Type: "ClientError", Message: offline.Message(err)}}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []resultError{{Type: "Error", Message: err.Error()}}
	}
	st := status.Status()
	if st.Reason == metav1.StatusReasonInvalid && st.Details != nil && len(st.Details.Causes) > 0 {
		out := make([]resultError, 0, len(st.Details.Causes))
		for _, c := range st.Details.Causes {
			out = append(out, resultError{Field: c.Field, Type: string(c.Type), Message: c.Message})
		}
		return out
	}
	return []resultError{{Type: string(st.Reason), Message: st.Message}}
}

// movedFields are fields of older KubeStellar releases that the apiserver reports as unknown,
// with where they are now.
var movedFields = []struct{ field, hint string }{
	{`unknown field "spec.wantSingletonReportedState"`,
		`spec.wantSingletonReportedState moved in KubeStellar 0.26: set wantSingletonReportedState on each downsync clause (spec.downsync[].wantSingletonReportedState)`},
	{`.statusCollection"`,
		`spec.downsync[].statusCollection is the pre-0.26 KubeStellar shape: list the collectors in the clause's statusCollectors (spec.downsync[].statusCollectors)`},
}

// hints says where the fields that an error reports as unknown moved.
func hints(message string) []string {
	var out []string
	for _, m := range movedFields {
		if strings.Contains(message, m.field) {
			out = append(out, m.hint)
		}
	}
	return out
}

// printValidateResults prints, like kubectl apply: warnings ("Warning: ...") and errors on
// errOut, one line per valid object on out; or everything as JSON/YAML on out.
func printValidateResults(out, errOut io.Writer, format string, results []validateResult) error {
	switch format {
	case "json", "yaml":
		if results == nil {
			results = []validateResult{}
		}
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		} else {
			b = append(b, '\n')
		}
		_, err = out.Write(b)
		return err
	}
	for _, r := range results {
		for _, w := range r.Warnings {
			fmt.Fprintf(errOut, "Warning: %s\n", w)
		}
		if r.Valid {
			fmt.Fprintf(out, "%s/%s valid (%s)\n", strings.ToLower(r.Kind), r.Name, r.File)
			continue
		}
		fmt.Fprintf(errOut, "error: %s: %s\n", r.File, r.message)
		for _, h := range r.Hints {
			fmt.Fprintf(errOut, "hint: %s\n", h)
		}
	}
	return nil
}

package rules

import "k8s.io/apimachinery/pkg/util/validation/field"

// ErrorStrings is how the problems of a spec are listed in the `.status.errors` of our kinds and
// of a BindingPolicy: each field error as the apiserver prints it, field path first.
func ErrorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

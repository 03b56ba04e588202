package classifier

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// StatusToken is the first token of every pointer into reported state.
const StatusToken = "status"

// apiVersionRE matches a Kubernetes API version: v1, v1beta1, v2alpha3.
var apiVersionRE = regexp.MustCompile(`^v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?$`)

// Messages of the checks, shared with the docs and the tests.
const (
	MsgNameFormat       = "must be resource.version.group, or resource.version for the core group (e.g. jobs.v1.batch, pods.v1)"
	MsgVersionFormat    = "must be a Kubernetes API version such as v1, v1beta1 or v2alpha3"
	MsgEmptyPointer     = "the empty pointer (the whole object) cannot be classified"
	MsgStatusIsReported = "no part of .status can be made desired state"
)

// ParseName returns the resource a ContentClassifier named name applies to, or field errors (at
// fldPath) when the name is not `resource.version.group` / `resource.version`.
func ParseName(name string, fldPath *field.Path) (schema.GroupVersionResource, field.ErrorList) {
	var errs field.ErrorList
	parts := strings.SplitN(name, ".", 3)
	if len(parts) < 2 {
		return schema.GroupVersionResource{}, field.ErrorList{field.Invalid(fldPath, name, MsgNameFormat)}
	}
	gvr := schema.GroupVersionResource{Resource: parts[0], Version: parts[1]}
	if len(parts) == 3 {
		gvr.Group = parts[2]
	}
	for _, msg := range validation.IsDNS1123Label(gvr.Resource) {
		errs = append(errs, field.Invalid(fldPath, name, fmt.Sprintf("resource %q: %s", gvr.Resource, msg)))
	}
	if !apiVersionRE.MatchString(gvr.Version) {
		errs = append(errs, field.Invalid(fldPath, name, fmt.Sprintf("version %q: %s", gvr.Version, MsgVersionFormat)))
	}
	if len(parts) == 3 {
		for _, msg := range validation.IsDNS1123Subdomain(gvr.Group) {
			errs = append(errs, field.Invalid(fldPath, name, fmt.Sprintf("group %q: %s", gvr.Group, msg)))
		}
	}
	if len(errs) > 0 {
		return schema.GroupVersionResource{}, errs
	}
	return gvr, nil
}

// Validate runs every rule of docs/rules.md "ContentClassifier" on cc and returns the violations as field errors: the name
// format (at metadata.name) and the pointer rules (at spec.desiredStatePointers[i] and
// spec.dontPropagatePointers[i]).
func Validate(cc *controlv1alpha1.ContentClassifier) field.ErrorList {
	_, errs := ParseName(cc.Name, field.NewPath("metadata", "name"))
	return append(errs, ValidateSpec(&cc.Spec, field.NewPath("spec"))...)
}

// ValidateSpec checks the pointer rules of a ContentClassifier's spec.
func ValidateSpec(spec *controlv1alpha1.ContentClassifierSpec, fldPath *field.Path) field.ErrorList {
	desiredPath := fldPath.Child("desiredStatePointers")
	dontPath := fldPath.Child("dontPropagatePointers")
	var errs field.ErrorList
	errs = append(errs, validateList(spec.DesiredStatePointers, desiredPath, true)...)
	errs = append(errs, validateList(spec.DontPropagatePointers, dontPath, false)...)
	for j, p := range spec.DontPropagatePointers {
		if len(p) == 0 {
			continue
		}
		if i := slices.IndexFunc(spec.DesiredStatePointers, func(q controlv1alpha1.JSONPointer) bool { return slices.Equal(p, q) }); i >= 0 {
			errs = append(errs, field.Invalid(dontPath.Index(j), display(p),
				fmt.Sprintf("also listed in %s; a part of the object cannot be both desired state and not propagated", desiredPath.Index(i))))
		}
	}
	return errs
}

func validateList(ptrs []controlv1alpha1.JSONPointer, fldPath *field.Path, desired bool) field.ErrorList {
	var errs field.ErrorList
	for i, p := range ptrs {
		switch {
		case len(p) == 0:
			errs = append(errs, field.Invalid(fldPath.Index(i), display(p), MsgEmptyPointer))
			continue
		case desired && p[0] == StatusToken:
			errs = append(errs, field.Invalid(fldPath.Index(i), display(p), MsgStatusIsReported))
		}
		if slices.ContainsFunc(ptrs[:i], func(q controlv1alpha1.JSONPointer) bool { return slices.Equal(p, q) }) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), display(p)))
		}
	}
	return errs
}

// display is how a pointer appears in messages: as the JSON list the user wrote.
func display(p controlv1alpha1.JSONPointer) []string {
	if p == nil {
		return []string{}
	}
	return p
}

// String renders a parsed pointer in RFC 6901 form, e.g. ["status", "a/b"] as "/status/a~1b".
func String(p controlv1alpha1.JSONPointer) string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

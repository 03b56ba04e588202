package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Wildcard is the list entry that matches everything in `resources`, `namespaces` and
// `objectNames`.
const Wildcard = "*"

// Messages of the checks, shared with the docs and the tests.
const (
	MsgNoObjectTest = "must name at least one of apiGroup, resources, namespaces, namespaceSelectors, " +
		`objectSelectors or objectNames (resources: ["*"] matches every object)`
	MsgEmptyName = "must not be empty"
)

// ValidateBindingPolicy returns every shape error of bp, with field paths under metadata. and spec.
func ValidateBindingPolicy(bp *controlv1alpha1.BindingPolicy) field.ErrorList {
	var errs field.ErrorList
	namePath := field.NewPath("metadata", "name")
	if bp.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	}
	for _, msg := range validation.IsDNS1123Subdomain(bp.Name) {
		if bp.Name != "" {
			errs = append(errs, field.Invalid(namePath, bp.Name, msg))
		}
	}
	return append(errs, ValidateBindingPolicySpec(&bp.Spec, field.NewPath("spec"))...)
}

// ValidateBindingPolicySpec checks a BindingPolicy's spec.
func ValidateBindingPolicySpec(spec *controlv1alpha1.BindingPolicySpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateSelectors(spec.ClusterSelectors, fldPath.Child("clusterSelectors"))...)
	for i := range spec.Downsync {
		errs = append(errs, ValidateDownsyncClause(&spec.Downsync[i], fldPath.Child("downsync").Index(i))...)
	}
	return errs
}

// ValidateDownsyncClause checks one downsync clause: its object test and its modulation.
func ValidateDownsyncClause(c *controlv1alpha1.DownsyncPolicyClause, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	t := &c.DownsyncObjectTest
	if t.APIGroup == nil && t.Resources == nil && t.Namespaces == nil && t.NamespaceSelectors == nil &&
		t.ObjectSelectors == nil && t.ObjectNames == nil {
		errs = append(errs, field.Required(fldPath, MsgNoObjectTest))
	}
	if t.APIGroup != nil && *t.APIGroup != "" {
		for _, msg := range validation.IsDNS1123Subdomain(*t.APIGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("apiGroup"), *t.APIGroup, msg))
		}
	}
	errs = append(errs, validateNames(t.Resources, fldPath.Child("resources"), validation.IsDNS1123Label)...)
	errs = append(errs, validateNames(t.Namespaces, fldPath.Child("namespaces"), validation.IsDNS1123Label)...)
	errs = append(errs, validateSelectors(t.NamespaceSelectors, fldPath.Child("namespaceSelectors"))...)
	errs = append(errs, validateSelectors(t.ObjectSelectors, fldPath.Child("objectSelectors"))...)
	errs = append(errs, validateNames(t.ObjectNames, fldPath.Child("objectNames"), func(s string) []string {
		return path.IsValidPathSegmentName(s)
	})...)
	for j, name := range c.StatusCollectors {
		p := fldPath.Child("statusCollectors").Index(j)
		if name == "" {
			errs = append(errs, field.Invalid(p, name, MsgEmptyName))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	return errs
}

// validateNames checks list entries that are "*" or a name that check accepts.
func validateNames(names []string, fldPath *field.Path, check func(string) []string) field.ErrorList {
	var errs field.ErrorList
	for j, n := range names {
		switch {
		case n == Wildcard:
		case n == "":
			errs = append(errs, field.Invalid(fldPath.Index(j), n, MsgEmptyName))
		default:
			for _, msg := range check(n) {
				errs = append(errs, field.Invalid(fldPath.Index(j), n, msg))
			}
		}
	}
	return errs
}

func validateSelectors(sels []metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range sels {
		errs = append(errs, metav1validation.ValidateLabelSelector(&sels[i], metav1validation.LabelSelectorValidationOptions{}, fldPath.Index(i))...)
	}
	return errs
}

// BindingPolicyWarnings lists what is legal in bp but probably not what its author meant, each as
// "field.path: message", the form kubectl prints after "Warning:".
func BindingPolicyWarnings(bp *controlv1alpha1.BindingPolicy) []string {
	var warnings []string
	spec := field.NewPath("spec")
	if len(bp.Spec.ClusterSelectors) == 0 {
		warnings = append(warnings, spec.Child("clusterSelectors").String()+": empty, so the policy selects no cluster")
	}
	if len(bp.Spec.Downsync) == 0 {
		warnings = append(warnings, spec.Child("downsync").String()+": empty, so the policy selects no object")
	}
	for i, c := range bp.Spec.Downsync {
		seen := sets.New[string]()
		for j, name := range c.StatusCollectors {
			if seen.Has(name) {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate collector %q is applied once",
					spec.Child("downsync").Index(i).Child("statusCollectors").Index(j), name))
			}
			seen.Insert(name)
		}
	}
	return warnings
}

// ExplicitResources returns the resources a clause names explicitly and its API group (nil: any
// group). It returns no resources when the clause matches every resource ("*" or no list). The
// schema-aware admission check types collectors against exactly these resources.
func ExplicitResources(c *controlv1alpha1.DownsyncPolicyClause) (apiGroup *string, resources []string) {
	for _, r := range c.Resources {
		if r == Wildcard {
			return c.APIGroup, nil
		}
	}
	return c.APIGroup, c.Resources
}

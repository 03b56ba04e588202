package webhooks

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// The limits that the CRD schemas (config/crd/bases, from the markers in api/) declare for the
// fields the validating webhooks read. The apiserver enforces them before it calls a webhook,
// but anyone who reaches the webhook port can send an AdmissionReview that never went through
// the apiserver, so each handler checks them again before it compiles anything
// (TestSchemaLimitsMatchCRDs keeps this list in step with the CRDs).
const (
	// MaxRegoLength is the longest `spec.rego` of an AggregationPolicy, in characters.
	MaxRegoLength = 262144
	// MaxExamples is the most `spec.examples` an AggregationPolicy may have.
	MaxExamples = 64
	// MaxExpressionLength is the longest CEL expression of a StatusCollector, in characters.
	MaxExpressionLength = 10000
	// MaxColumnNameLength is the longest column name of a StatusCollector, in characters.
	MaxColumnNameLength = 253
)

// AggregationPolicyLimits returns the violations of the CRD schema's limits in p's spec.
func AggregationPolicyLimits(p *policyv1alpha1.AggregationPolicy) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, minLength(spec.Child("target", "kind"), p.Spec.Target.Kind)...)
	errs = append(errs, stringLimits(spec.Child("rego"), p.Spec.Rego, true, MaxRegoLength)...)
	exPath := spec.Child("examples")
	if n := len(p.Spec.Examples); n > MaxExamples {
		// The examples are not looked at further: their number alone refuses the object.
		return append(errs, field.TooMany(exPath, n, MaxExamples))
	}
	for i := range p.Spec.Examples {
		ex, path := &p.Spec.Examples[i], exPath.Index(i)
		errs = append(errs, minLength(path.Child("name"), ex.Name)...)
		if len(ex.Object.Raw) == 0 || ex.Object.Raw[0] != '{' {
			errs = append(errs, field.Required(path.Child("object"), "an object"))
		}
		if len(ex.WECs) == 0 {
			errs = append(errs, field.Required(path.Child("wecs"), "at least one WEC"))
		}
		for j := range ex.WECs {
			errs = append(errs, minLength(path.Child("wecs").Index(j).Child("name"), ex.WECs[j].Name)...)
		}
	}
	return errs
}

// StatusCollectorLimits returns the violations of the CRD schema's limits in sc's spec. A limit
// of 0 is an omitted one (the defaulting webhook has made it 20 by then).
func StatusCollectorLimits(sc *controlv1alpha1.StatusCollector) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if sc.Spec.Filter != nil {
		errs = append(errs, stringLimits(spec.Child("filter"), string(*sc.Spec.Filter), false, MaxExpressionLength)...)
	}
	named := func(list string, exprs []controlv1alpha1.NamedExpression) {
		for i, e := range exprs {
			p := spec.Child(list).Index(i)
			errs = append(errs, stringLimits(p.Child("name"), e.Name, true, MaxColumnNameLength)...)
			errs = append(errs, stringLimits(p.Child("def"), string(e.Def), false, MaxExpressionLength)...)
		}
	}
	named("groupBy", sc.Spec.GroupBy)
	named("select", sc.Spec.Select)
	for i, a := range sc.Spec.CombinedFields {
		p := spec.Child("combinedFields").Index(i)
		errs = append(errs, stringLimits(p.Child("name"), a.Name, true, MaxColumnNameLength)...)
		switch a.Type {
		case controlv1alpha1.AggregatorTypeCount, controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
			controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), a.Type, []controlv1alpha1.AggregatorType{
				controlv1alpha1.AggregatorTypeCount, controlv1alpha1.AggregatorTypeSum, controlv1alpha1.AggregatorTypeAvg,
				controlv1alpha1.AggregatorTypeMin, controlv1alpha1.AggregatorTypeMax}))
		}
		if a.Subject != nil {
			errs = append(errs, stringLimits(p.Child("subject"), string(*a.Subject), false, MaxExpressionLength)...)
		}
	}
	if sc.Spec.Limit < 0 {
		errs = append(errs, field.Invalid(spec.Child("limit"), sc.Spec.Limit, "should be greater than or equal to 1"))
	}
	return errs
}

// ContentClassifierLimits returns the violations of the CRD schema's limits in cc's spec: the
// schema declares none (the classifier check is linear in the pointers, and the webhook server
// reads at most 7 MiB of a request), so there are none.
func ContentClassifierLimits(*controlv1alpha1.ContentClassifier) field.ErrorList { return nil }

// stringLimits checks a string's length in characters (as the schema's minLength and maxLength
// count: code points) without decoding more than maxChars+1 of them.
func stringLimits(p *field.Path, s string, required bool, maxChars int) field.ErrorList {
	if required && s == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(s) <= maxChars {
		return nil
	}
	n := 0
	for range s {
		if n++; n > maxChars {
			return field.ErrorList{field.TooLongCharacters(p, "", maxChars)}
		}
	}
	return nil
}

func minLength(p *field.Path, s string) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}

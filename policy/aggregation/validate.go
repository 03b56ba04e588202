package aggregation

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// ValidatePolicy compiles and checks a user policy (sandbox, required rule, examples), offline:
// ValidatePolicyContext without a deadline of its own.
func ValidatePolicy(p *policyv1alpha1.AggregationPolicy) field.ErrorList {
	return ValidatePolicyContext(context.Background(), p)
}

// ValidatePolicyContext is the admission check of a user policy (sandbox, required rule,
// examples). Every evaluation it runs — a static `combine`, the examples — stops when ctx ends
// (the admission request's deadline), as well as at its own time bound; examples not run by then
// are reported. Rego errors carry the module's line and column.
func ValidatePolicyContext(ctx context.Context, p *policyv1alpha1.AggregationPolicy) field.ErrorList {
	lim := defaultLimits()
	lim.parent = ctx
	_, errs := validatePolicy(p, lim)
	return errs
}

// validatePolicy checks a user policy within admissionTimeout (and lim.parent, when set): the
// same check at admission, in the CLI and in the controller.
func validatePolicy(p *policyv1alpha1.AggregationPolicy, lim limits) (*module, field.ErrorList) {
	parent := lim.parent
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeoutCause(parent, admissionTimeout,
		fmt.Errorf("compiling the policy and running its examples took more than %s", admissionTimeout))
	defer cancel()
	lim.parent = ctx
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if p.Spec.Target.Kind == "" {
		errs = append(errs, field.Required(spec.Child("target", "kind"), "the kind this policy aggregates"))
	}
	regoPath := spec.Child("rego")
	if p.Spec.Rego == "" {
		return nil, append(errs, field.Required(regoPath, "a Rego module defining `combine` or `status`"))
	}
	// Compiled modules keep the limits without the admission check's context.
	modLim := lim
	modLim.parent = nil
	mod, err := compileModule("AggregationPolicy/"+p.Name, p.Spec.Rego, modLim, ctx)
	if mod != nil {
		mod.withHealth = readsHealth(p.Spec.Rego)
	}
	if err != nil {
		if ces, ok := err.(compileErrors); ok {
			for _, ce := range ces {
				errs = append(errs, field.Invalid(regoPath, "(Rego source)", "line "+ce.Error()))
			}
		} else {
			errs = append(errs, field.Invalid(regoPath, "(Rego source)", err.Error()))
		}
		return nil, errs
	}
	for i, ex := range p.Spec.Examples {
		if lim.parent != nil && lim.parent.Err() != nil {
			errs = append(errs, field.Invalid(spec.Child("examples").Index(i), ex.Name,
				fmt.Sprintf("example %s not run: %v", ex.Name, context.Cause(lim.parent))))
			break
		}
		errs = append(errs, runExample(mod, p, ex, spec.Child("examples").Index(i), lim)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return mod, nil
}

// runExample aggregates one example with mod in force for the policy's kind.
func runExample(mod *module, p *policyv1alpha1.AggregationPolicy, ex policyv1alpha1.AggregationExample, path *field.Path, lim limits) field.ErrorList {
	var errs field.ErrorList
	obj := map[string]any{}
	if len(ex.Object.Raw) > 0 {
		if err := json.Unmarshal(ex.Object.Raw, &obj); err != nil {
			errs = append(errs, field.Invalid(path.Child("object"), string(ex.Object.Raw), err.Error()))
		}
	}
	wecs := make([]WEC, 0, len(ex.WECs))
	for j, w := range ex.WECs {
		wec := WEC{Name: w.Name, Details: w.StatusDetails}
		if w.Status != nil && len(w.Status.Raw) > 0 && string(w.Status.Raw) != "null" {
			if err := json.Unmarshal(w.Status.Raw, &wec.Status); err != nil {
				errs = append(errs, field.Invalid(path.Child("wecs").Index(j).Child("status"), string(w.Status.Raw), "must be a JSON object: "+err.Error()))
			}
		}
		wecs = append(wecs, wec)
	}
	var want map[string]any
	if ex.ExpectedStatus != nil && len(ex.ExpectedStatus.Raw) > 0 && string(ex.ExpectedStatus.Raw) != "null" {
		if err := json.Unmarshal(ex.ExpectedStatus.Raw, &want); err != nil {
			errs = append(errs, field.Invalid(path.Child("expectedStatus"), string(ex.ExpectedStatus.Raw), "must be a JSON object: "+err.Error()))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	e := &Engine{lim: lim, byKind: map[schema.GroupKind]*module{targetGK(p): mod}}
	if mod.withHealth { // input.wecs[i].health by Argo CD's own scripts (a user's ConfigMap is the controller's)
		e.lua, _ = luahealth.Builtin()
	}
	e.generic = mod
	got, err := e.Returned(targetGK(p), obj, wecs)
	if err != nil {
		return field.ErrorList{field.Invalid(path, ex.Name, "example "+ex.Name+": evaluation failed: "+err.Error())}
	}
	if !SameJSON(got, want) {
		return field.ErrorList{field.Invalid(path.Child("expectedStatus"), compactJSON(want),
			fmt.Sprintf("example %s: the policy produced %s", ex.Name, compactJSON(got)))}
	}
	return nil
}

// SameJSON reports whether a and b are equal as JSON documents (2 and 2.0 are equal).
func SameJSON(a, b any) bool {
	return compactJSON(a) == compactJSON(b)
}

func compactJSON(v any) string {
	if m, ok := v.(map[string]any); ok && m == nil {
		return "null"
	}
	b, err := json.Marshal(NormalizeNumbers(v))
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

package offline

import (
	"context"
	"fmt"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apimachineryvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// strategy is the create half of the apiserver's custom resource strategy
// (k8s.io/apiextensions-apiserver/pkg/registry/customresource, customResourceStrategy and
// customResourceValidator), composed of the same exported validation functions in the same
// order. That package is not imported because it brings the apiserver's etcd storage into
// the binary (+40 MB with the rest). Scale subresources are not handled: no CRD of ours has one
// (New refuses CRDs that do).
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator

	namespaced bool
	kind       schema.GroupVersionKind
	validator  apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
	status     *apiextensionsinternal.CustomResourceSubresourceStatus
}

var _ rest.RESTCreateStrategy = strategy{}

func newStrategy(typer runtime.ObjectTyper, namespaced bool, kind schema.GroupVersionKind, validator apiservervalidation.SchemaValidator,
	structural *structuralschema.Structural, status *apiextensionsinternal.CustomResourceSubresourceStatus) strategy {
	return strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, namespaced: namespaced, kind: kind,
		validator: validator, structural: structural, status: status,
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
}

func (s strategy) NamespaceScoped() bool { return s.namespaced }

// PrepareForCreate drops the status when the kind has a status subresource, and sets the
// generation.
func (s strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s.status != nil {
		delete(obj.(*unstructured.Unstructured).UnstructuredContent(), "status")
	}
	accessor, _ := meta.Accessor(obj)
	accessor.SetGeneration(1)
}

// Validate is customResourceStrategy.Validate: type meta, object meta, the OpenAPI schema, the
// metadata of embedded resources, list types, and the CEL rules unless a blocking error came
// first.
func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return field.ErrorList{field.Invalid(field.NewPath(""), obj, fmt.Sprintf("has type %T. Must be a pointer to an Unstructured type", obj))}
	}
	var errs field.ErrorList
	errs = append(errs, s.validateCustomResource(ctx, u)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	if s.cel == nil { // no CEL rules in the schema
		return errs
	}
	if has, err := hasBlockingErr(errs); has {
		errs = append(errs, err)
	} else {
		err, _ := s.cel.Validate(ctx, nil, s.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, err...)
	}
	return errs
}

// validateCustomResource is customResourceValidator.Validate without the scale subresource.
func (s strategy) validateCustomResource(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	if errs := s.validateTypeMeta(u); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	errs = append(errs, s.validateObjectMeta(ctx, u)...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), s.validator)...)
	return errs
}

func (s strategy) validateTypeMeta(u *unstructured.Unstructured) field.ErrorList {
	typeAccessor, err := meta.TypeAccessor(u)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("kind"), nil, err.Error())}
	}
	var errs field.ErrorList
	if typeAccessor.GetKind() != s.kind.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), typeAccessor.GetKind(), fmt.Sprintf("must be %v", s.kind.Kind)))
	}
	if typeAccessor.GetAPIVersion() != s.kind.Group+"/"+s.kind.Version {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), typeAccessor.GetAPIVersion(), fmt.Sprintf("must be %v", s.kind.Group+"/"+s.kind.Version)))
	}
	return errs
}

func (s strategy) validateObjectMeta(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	m := &metav1.ObjectMeta{}
	if raw := u.UnstructuredContent()["metadata"]; raw != nil {
		metadataMap, ok := raw.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(metadataMap, m); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
		}
	}
	return validation.ValidateObjectMetaDeclaratively(ctx, operation.Create, m, nil, s.namespaced, validation.NameIsDNSSubdomain,
		field.NewPath("metadata"), utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// hasBlockingErr is the strategy's: errors after which the CEL rules are not run.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}

// WarningsOnCreate warns about finalizer names, as the strategy does.
func (s strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	var warnings []string
	fldPath := field.NewPath("metadata", "finalizers")
	for _, f := range sets.List(sets.New(accessor.GetFinalizers()...)) {
		for _, msg := range apimachineryvalidation.IsQualifiedName(f) {
			warnings = append(warnings, fmt.Sprintf("%s: %q: %s", fldPath.String(), f, msg))
		}
		if len(strings.Split(f, "/")) == 1 && !standardFinalizers.Has(f) {
			if strings.Contains(f, ".") {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", fldPath.String(), f))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", fldPath.String(), f))
			}
		}
	}
	return warnings
}

var standardFinalizers = sets.New(metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "kubernetes")

func (strategy) Canonicalize(runtime.Object) {}

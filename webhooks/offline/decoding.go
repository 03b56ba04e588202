package offline

import (
	"fmt"
	"sync"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// transformDecodeError is the create handler's wording of a decoding failure
// (k8s.io/apiserver/pkg/endpoints/handlers/rest.go, transformDecodeError, whose other branch —
// a body without a kind — cannot happen here: the kind selected the decoder).
func transformDecodeError(typer runtime.ObjectTyper, baseErr error, into runtime.Object, gvk *schema.GroupVersionKind) error {
	objGVKs, _, err := typer.ObjectKinds(into)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	kind := objGVKs[0].Kind
	if gvk != nil && len(gvk.Kind) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, kind, baseErr))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", kind, baseErr))
}

// warnings records the warnings the apiserver code adds.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// unstructuredCreator is the CRD handler's: every kind is an Unstructured.
type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// unstructuredDefaulter applies the structural schema's defaults, as the CRD handler's
// unstructuredDefaulter does.
type unstructuredDefaulter struct {
	structurals map[string]*structuralschema.Structural
	gk          schema.GroupKind
}

func (d unstructuredDefaulter) Default(in runtime.Object) {
	u, ok := in.(runtime.Unstructured)
	if !ok || u.GetObjectKind().GroupVersionKind().GroupKind() != d.gk {
		return
	}
	structuraldefaulting.Default(u.UnstructuredContent(), d.structurals[u.GetObjectKind().GroupVersionKind().Version])
}

// schemaCoercingDecoder is the CRD handler's decoder of request bodies with strict field
// validation (schemaCoercingDecoder with unstructuredSchemaCoercer{returnUnknownFieldPaths:
// true} in k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go, which are
// not exported): it decodes, then coerces ObjectMeta and prunes with the structural schema, and
// turns every pruned path into an `unknown field "PATH"` strict decoding error.
type schemaCoercingDecoder struct {
	delegate              runtime.Decoder
	structurals           map[string]*structuralschema.Structural
	gk                    schema.GroupKind
	preserveUnknownFields bool
}

func (d schemaCoercingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	var strictErrs []error
	obj, gvk, err := d.delegate.Decode(data, defaults, into)
	if err != nil {
		decodeStrictErr, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, gvk, err
		}
		strictErrs = decodeStrictErr.Errors()
	}
	var unknownFields []string
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unknownFields, err = d.coerce(u)
		if err != nil {
			return nil, gvk, err
		}
	}
	if len(strictErrs) > 0 || len(unknownFields) > 0 {
		for _, f := range unknownFields {
			strictErrs = append(strictErrs, fmt.Errorf(`unknown field "%s"`, f))
		}
		return obj, gvk, runtime.NewStrictDecodingError(strictErrs)
	}
	return obj, gvk, nil
}

// coerce is unstructuredSchemaCoercer.apply with returnUnknownFieldPaths, for a request body.
func (d schemaCoercingDecoder) coerce(u *unstructured.Unstructured) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if gv.Group == d.gk.Group && kind == d.gk.Kind {
		st := d.structurals[gv.Version]
		if !d.preserveUnknownFields {
			unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, st, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, st)
		}
		err, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, st, false, schemaobjectmeta.CoerceOptions{
			ReturnUnknownFieldPaths: true,
		})
		if err != nil {
			return nil, err
		}
		unknown = append(unknown, paths...)
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

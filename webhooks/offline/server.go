package offline

import (
	"context"
	"fmt"
	"io/fs"
	"path"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	restclient "k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Server plays the apiserver's part in creating custom resources of some CRDs.
type Server struct {
	kinds map[schema.GroupVersionKind]*servedKind
}

// servedKind is one served version of a CRD, built as the apiserver's CRD handler builds its
// serving info (k8s.io/apiextensions-apiserver/pkg/apiserver, getOrCreateServingInfoFor).
type servedKind struct {
	kind       schema.GroupVersionKind
	mapping    *meta.RESTMapping
	namespaced bool
	decoder    runtime.Decoder
	typer      runtime.ObjectTyper
	strategy   strategy
	// emptyCluster is kubectl's client for its lookup of the object.
	emptyCluster *restclient.RESTClient
}

// New serves the custom resources of crds (every served version). The CRDs are defaulted as
// the apiserver defaults a CRD it stores.
func New(crds ...*apiextensionsv1.CustomResourceDefinition) (*Server, error) {
	s := &Server{kinds: map[schema.GroupVersionKind]*servedKind{}}
	for _, crd := range crds {
		crd = crd.DeepCopy()
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		if err := s.add(crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	return s, nil
}

// LoadCRDs reads the CustomResourceDefinitions in the files of fsys that match pattern (e.g.
// "crd/bases/*.yaml"), one per file.
func LoadCRDs(fsys fs.FS, pattern string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(f), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

func (s *Server) add(crd *apiextensionsv1.CustomResourceDefinition) error {
	structurals := map[string]*structuralschema.Structural{}
	schemas := map[string]*apiextensionsinternal.JSONSchemaProps{} // by version, internal form
	for _, v := range crd.Spec.Versions {
		val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil {
			return err
		}
		if val == nil {
			continue
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return err
		}
		schemas[v.Name] = internal.OpenAPIV3Schema
		st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("version %s: not a structural schema: %w", v.Name, err)
		}
		st = st.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(st); err != nil {
			return err
		}
		structurals[v.Name] = st
	}
	typer := crdserverscheme.NewUnstructuredObjectTyper()
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		validator, _, err := apiservervalidation.NewSchemaValidator(schemas[v.Name])
		if err != nil {
			return err
		}
		var statusSpec *apiextensionsinternal.CustomResourceSubresourceStatus
		subresources, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return err
		}
		if subresources != nil && subresources.Status != nil {
			statusSpec = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		}
		if subresources != nil && subresources.Scale != nil {
			return fmt.Errorf("version %s: the scale subresource is not supported offline", v.Name)
		}
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		strategy := newStrategy(typer, namespaced, kind, validator, structurals[v.Name], statusSpec)

		// The request decoder: the strict JSON serializer (kubectl asks for strict field
		// validation), wrapped like the CRD handler's unstructuredNegotiatedSerializer.DecoderToVersion.
		strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, unstructuredCreator{}, typer, json.SerializerOptions{Strict: true})
		coercing := schemaCoercingDecoder{delegate: strict, structurals: structurals, gk: kind.GroupKind(),
			preserveUnknownFields: crd.Spec.PreserveUnknownFields}
		conversionScheme := runtime.NewScheme()
		decoder := versioning.NewCodec(nil, coercing, runtime.UnsafeObjectConvertor(conversionScheme), conversionScheme, conversionScheme,
			unstructuredDefaulter{structurals: structurals, gk: kind.GroupKind()}, nil, kind.GroupVersion(), "statusfoldOffline")
		scope := meta.RESTScopeRoot
		if namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapping := &meta.RESTMapping{Resource: kind.GroupVersion().WithResource(crd.Spec.Names.Plural), GroupVersionKind: kind, Scope: scope}
		emptyCluster, err := emptyClusterClient(kind.GroupVersion(), mapping.Resource.GroupResource())
		if err != nil {
			return err
		}
		s.kinds[kind] = &servedKind{kind: kind, mapping: mapping, namespaced: namespaced, decoder: decoder, typer: typer,
			strategy: strategy, emptyCluster: emptyCluster}
	}
	return nil
}

// Serves says whether gvk is one of the served kinds.
func (s *Server) Serves(gvk schema.GroupVersionKind) bool {
	_, ok := s.kinds[gvk]
	return ok
}

// Apply is Create of what `kubectl apply -f SOURCE` sends for a document (JSON) of a served
// kind when the object does not exist yet, or the error kubectl stops with before (a
// *ClientError, or the apiserver's refusal of a body over MaxRequestBodyBytes).
func (s *Server) Apply(ctx context.Context, source string, data []byte, mutate MutateFunc) (*unstructured.Unstructured, []string, error) {
	body, err := s.applyRequest(ctx, source, data)
	if err != nil {
		return nil, nil, err
	}
	return s.Create(ctx, body, mutate)
}

// MutateFunc is mutating admission: it may change the decoded object, or reject it with an
// error (as the apiserver returns a webhook's denial).
type MutateFunc func(ctx context.Context, obj *unstructured.Unstructured) error

// Create runs, for a JSON request body of a served kind, what the apiserver runs for a create
// request with strict field validation (what kubectl sends by default), in the apiserver's
// order:
//
//  1. decoding: duplicate fields, then the schema's pruning — fields the schema does not
//     have, including in metadata — are strict decoding errors (HTTP 400, "KIND in version
//     "V" cannot be handled as a KIND: strict decoding error: unknown field "spec.x""); a
//     malformed metadata is a decoding error; then the schema's defaults are applied;
//  2. mutating admission (mutate, when not nil);
//  3. the strategy's validation (HTTP 422, `KIND.GROUP "NAME" is invalid: [...]`): the
//     OpenAPI schema (types, enums, minimum, maxLength, required, ...), metadata, list types,
//     then the `x-kubernetes-validations` CEL rules unless a blocking error came first.
//
// Validating admission comes after that in the apiserver; Create returns the object as it would
// receive it. Errors are *apierrors.StatusError, as the apiserver returns them. Warnings are
// those the apiserver adds (e.g. for finalizer names).
func (s *Server) Create(ctx context.Context, body []byte, mutate MutateFunc) (*unstructured.Unstructured, []string, error) {
	var head struct {
		metav1.TypeMeta `json:",inline"`
	}
	if err := yaml.Unmarshal(body, &head); err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	k, ok := s.kinds[head.GroupVersionKind()]
	if !ok {
		return nil, nil, fmt.Errorf("%s is not served", head.GroupVersionKind())
	}
	rec := &warnings{}
	ctx = warning.WithWarningRecorder(ctx, rec)

	// The create handler (k8s.io/apiserver/pkg/endpoints/handlers/create.go).
	original := &unstructured.Unstructured{}
	original.SetGroupVersionKind(k.kind)
	defaultGVK := k.kind
	obj, gvk, err := k.decoder.Decode(body, &defaultGVK, original)
	if err != nil {
		return nil, nil, transformDecodeError(k.typer, err, original, gvk)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("decoded %T, not an unstructured object", obj))
	}
	namespace := ""
	if k.namespaced {
		namespace = u.GetNamespace()
		if namespace == "" {
			namespace = metav1.NamespaceDefault // kubectl's namespace when the file names none
		}
	}
	ctx = request.WithNamespace(ctx, namespace)
	if accessor, err := meta.Accessor(u); err == nil {
		rest.WipeObjectMetaSystemFields(accessor)
		if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(rest.ExpectedNamespaceForScope(namespace, k.namespaced), accessor); err != nil {
			return nil, nil, err
		}
	}
	if mutate != nil {
		if err := mutate(ctx, u); err != nil {
			return nil, rec.list, err
		}
	}

	// The registry's Create (k8s.io/apiserver/pkg/registry/generic/registry/store.go).
	accessor, err := meta.Accessor(u)
	if err != nil {
		return nil, rec.list, apierrors.NewInternalError(err)
	}
	rest.FillObjectMetaSystemFields(accessor)
	if err := rest.BeforeCreate(k.strategy, ctx, u); err != nil {
		return nil, rec.list, err
	}
	// What validating admission receives: no system fields (they are the stored object's).
	accessor.SetUID("")
	accessor.SetCreationTimestamp(metav1.Time{})
	return u, rec.list, nil
}

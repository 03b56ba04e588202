package offline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/util"
)

// MaxRequestBodyBytes is the apiserver's limit on a request body: 3 MiB, the generic server's
// default (k8s.io/apiserver/pkg/server.NewConfig), which kube-apiserver keeps.
const MaxRequestBodyBytes = 3 * 1024 * 1024

// ClientError is an error that kubectl stops with before the apiserver has answered the create
// request: Err as kubectl reports it (naming the source), Cause the underlying problem.
type ClientError struct {
	Err, Cause error
}

func (e *ClientError) Error() string { return e.Err.Error() }
func (e *ClientError) Unwrap() error { return e.Cause }

// applyRequest is what `kubectl apply -f SOURCE` does with one document (JSON) of a served kind
// before it creates the object in a cluster that does not have it yet
// (k8s.io/kubectl/pkg/cmd/apply, applyOneObject): it decodes the document as kubectl's resource
// builder does, looks the object up (client-go validates the name first), adds the
// last-applied-configuration annotation, drops nulls, and encodes the create request's body,
// which the apiserver refuses when it is larger than MaxRequestBodyBytes.
func (s *Server) applyRequest(ctx context.Context, source string, data []byte) ([]byte, error) {
	obj, gvk, err := kubectlDecode(source, data)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: not a single object", source)
	}
	k, ok := s.kinds[*gvk]
	if !ok {
		return nil, fmt.Errorf("%s is not served", gvk)
	}
	namespace := ""
	if k.namespaced {
		if namespace = u.GetNamespace(); namespace == "" {
			namespace = metav1.NamespaceDefault
		}
	}
	// kubectl names the object as cli-runtime's resource.Info.String does.
	info := fmt.Sprintf("Resource: %q, GroupVersionKind: %q\nName: %q, Namespace: %q",
		k.mapping.Resource.String(), k.mapping.GroupVersionKind.String(), u.GetName(), namespace)
	if _, err := util.GetModifiedConfiguration(u, true, unstructured.UnstructuredJSONScheme); err != nil {
		return nil, clientError(fmt.Sprintf("retrieving modified configuration from:\n%s\nfor:", info), source, err)
	}
	if err := getFromEmptyCluster(ctx, k, namespace, u.GetName()); !apierrors.IsNotFound(err) {
		if err == nil {
			err = fmt.Errorf("an empty cluster returned an object")
		}
		return nil, clientError(fmt.Sprintf("retrieving current configuration of:\n%s\nfrom server for:", info), source, err)
	}
	if err := util.CreateApplyAnnotation(u, unstructured.UnstructuredJSONScheme); err != nil {
		return nil, clientError("creating", source, err)
	}
	pruneNullsFromMap(u.Object)
	body, err := runtime.Encode(unstructured.UnstructuredJSONScheme, u)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	return body, nil
}

// kubectlDecode decodes a document (JSON) as kubectl's resource builder does, whatever its kind:
// an object with apiVersion and kind whose metadata decodes into ObjectMeta (cli-runtime's
// metadataValidatingDecoder). Its error is a *ClientError, as kubectl reports it.
func kubectlDecode(source string, data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	if err := kubectlValidate(source, data); err != nil {
		return nil, nil, err
	}
	obj, gvk, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err == nil {
		err = utiljson.Unmarshal(data, &metadataOnlyObject{})
	}
	if err != nil {
		return nil, nil, &ClientError{Err: fmt.Errorf("unable to decode %q: %v", source, err), Cause: err}
	}
	return obj, gvk, nil
}

// kubectlValidate is the client-side check that `kubectl apply` makes of every document before
// it decodes it, with strict field validation against a server that supports it (kubectl's
// default): that the document is an object with a string apiVersion and kind. It is
// getObjectKind of k8s.io/kubectl/pkg/validation, run by its paramVerifyingSchema, worded as
// cli-runtime's ValidateSchema and StreamVisitor word its failure (those packages would bring
// kubectl's command line and kustomize into the binary).
func kubectlValidate(source string, data []byte) error {
	var obj any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return &ClientError{Err: fmt.Errorf("error validating %q: %v", source, err), Cause: err}
	}
	if errs := objectKindErrors(obj); len(errs) > 0 {
		err := fmt.Errorf("error validating data: %v; if you choose to ignore these errors, turn validation off with --validate=false",
			utilerrors.NewAggregate(errs))
		return &ClientError{Err: fmt.Errorf("error validating %q: %v", source, err), Cause: err}
	}
	return nil
}

// objectKindErrors is getObjectKind's list of problems (k8s.io/kubectl/pkg/validation).
func objectKindErrors(obj any) []error {
	fields, ok := obj.(map[string]any)
	if !ok || fields == nil {
		return []error{errors.New("invalid object to validate")}
	}
	var errs []error
	switch apiVersion := fields["apiVersion"].(type) {
	case nil:
		errs = append(errs, errors.New("apiVersion not set"))
	case string:
		if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, errors.New("apiVersion isn't string type"))
	}
	switch fields["kind"].(type) {
	case nil:
		errs = append(errs, errors.New("kind not set"))
	case string:
	default:
		errs = append(errs, errors.New("kind isn't string type"))
	}
	return errs
}

// getFromEmptyCluster is kubectl's lookup of the object (resource.Info.Get) with client-go's
// request builder, against a cluster that answers every request with 404 Not Found: client-go's
// own checks (an empty or invalid name) fail before any request.
func getFromEmptyCluster(ctx context.Context, k *servedKind, namespace, name string) error {
	return k.emptyCluster.Get().NamespaceIfScoped(namespace, k.namespaced).Resource(k.mapping.Resource.Resource).
		Name(name).Do(ctx).Error()
}

// emptyClusterClient is a REST client for gv whose every request is answered with 404 Not Found.
func emptyClusterClient(gv schema.GroupVersion, gr schema.GroupResource) (*rest.RESTClient, error) {
	return rest.RESTClientFor(&rest.Config{Host: "https://offline.invalid", APIPath: "/apis", QPS: -1, // no client-side throttling
		ContentConfig: rest.ContentConfig{GroupVersion: &gv, NegotiatedSerializer: serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()},
		Transport:     notFound{gr: gr}})
}

// notFound answers every request as an apiserver without the object does.
type notFound struct{ gr schema.GroupResource }

func (n notFound) RoundTrip(req *http.Request) (*http.Response, error) {
	st := apierrors.NewNotFound(n.gr, "").Status()
	st.APIVersion, st.Kind = "v1", "Status"
	body, err := utiljson.Marshal(st)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": []string{"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// clientError is kubectl's wording of a failed step (AddSourceToErr in k8s.io/kubectl/pkg/cmd/util
// for an error that is not the apiserver's).
func clientError(verb, source string, err error) *ClientError {
	return &ClientError{Err: fmt.Errorf("error when %s %q: %v", verb, source, err), Cause: err}
}

// metadataOnlyObject is cli-runtime's check that a document's metadata decodes.
type metadataOnlyObject struct {
	metav1.TypeMeta   `json:""`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// pruneNullsFromMap is kubectl apply's removal of nulls before a create (pruneNullsFromMap in
// k8s.io/kubectl/pkg/cmd/apply, not exported).
func pruneNullsFromMap(data map[string]any) {
	for k, v := range data {
		if v == nil {
			delete(data, k)
		} else {
			pruneNulls(v)
		}
	}
}

func pruneNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		pruneNullsFromMap(v)
	case []any:
		for _, e := range v {
			pruneNulls(e)
		}
	}
}

package offline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
	"github.com/statusfold/statusfold/webhooks/offline/kubectltest"
)

// widgets is a CRD with what the apiserver checks: a default, an enum, a minimum, a required
// field, and an x-kubernetes-validations CEL rule.
const widgets = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [max]
            x-kubernetes-validations:
            - rule: self.min <= self.max
              message: min must not exceed max
            properties:
              min: {type: integer, minimum: 0, default: 0}
              max: {type: integer}
              mode: {type: string, enum: [fast, slow], default: fast}
`

func widgetServer(t *testing.T) *offline.Server {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(widgets), crd); err != nil {
		t.Fatal(err)
	}
	s, err := offline.New(crd)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// blocked is the error the apiserver adds when a schema error keeps it from running the CEL
// rules.
const blocked = `* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`

// sameLines compares kubectl messages whose cause lines may come in any order (the OpenAPI
// validator walks properties in Go map order).
func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

func TestServerCreate(t *testing.T) {
	s := widgetServer(t)
	tests := []struct {
		name    string
		doc     string
		mutate  offline.MutateFunc
		wantErr string // kubectl's message; empty: admitted
		want    map[string]any
	}{
		{name: "defaults are applied", doc: `{spec: {max: 3}}`,
			want: map[string]any{"min": int64(0), "max": int64(3), "mode": "fast"}},
		{name: "CEL rule", doc: `{spec: {min: 5, max: 3}}`,
			wantErr: `The Widget "w" is invalid: spec: Invalid value: min must not exceed max`},
		{name: "required", doc: `{spec: {min: 1}}`,
			wantErr: "The Widget \"w\" is invalid: \n* spec.max: Required value\n" + blocked},
		{name: "a type error blocks the CEL rules", doc: `{spec: {min: 5, max: "3"}}`,
			wantErr: "The Widget \"w\" is invalid: \n" +
				`* spec.max: Invalid value: "string": spec.max in body must be of type integer: "string"` + "\n" + blocked},
		{name: "enum and minimum", doc: `{spec: {min: -1, max: 3, mode: medium}}`,
			wantErr: "The Widget \"w\" is invalid: \n" +
				`* spec.min: Invalid value: -1: spec.min in body should be greater than or equal to 0` + "\n" +
				`* spec.mode: Unsupported value: "medium": supported values: "fast", "slow"` + "\n" + blocked},
		{name: "unknown fields are strict decoding errors", doc: `{spec: {max: 3, colour: red}, extra: 1}`,
			wantErr: `Error from server (BadRequest): error when creating "f.yaml": Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "extra", unknown field "spec.colour"`},
		{name: "mutating admission runs before validation", doc: `{spec: {min: 5, max: 3}}`,
			mutate: func(_ context.Context, u *unstructured.Unstructured) error {
				return unstructured.SetNestedField(u.Object, int64(9), "spec", "max")
			},
			want: map[string]any{"min": int64(5), "max": int64(9), "mode": "fast"}},
		{name: "kubectl's own checks come first", doc: `{metadata: {name: ""}, spec: {max: 3}}`,
			wantErr: "error: error when retrieving current configuration of:\n" +
				`Resource: "example.com/v1, Resource=widgets", GroupVersionKind: "example.com/v1, Kind=Widget"` + "\n" +
				`Name: "", Namespace: "default"` + "\n" +
				`from server for: "f.yaml": resource name may not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := map[string]any{}
			if err := yaml.Unmarshal([]byte(tt.doc), &doc); err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}
			for k, v := range doc {
				obj[k] = v
			}
			body, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if body, err = yaml.YAMLToJSON(body); err != nil {
				t.Fatal(err)
			}
			u, _, err := s.Apply(context.Background(), "f.yaml", body, tt.mutate)
			if got := kubectltest.Message(err, "f.yaml"); !sameLines(got, tt.wantErr) {
				t.Fatalf("error:\n%s\nwant:\n%s", got, tt.wantErr)
			}
			if err != nil && apierrors.IsInvalid(err) {
				if got, want := offline.Message(err), kubectltest.Message(err, "f.yaml"); got != want {
					t.Errorf("offline.Message:\n%s\nkubectl's printer:\n%s", got, want)
				}
			}
			if err != nil {
				return
			}
			spec, _, _ := unstructured.NestedMap(u.Object, "spec")
			if diff := cmp.Diff(tt.want, spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if a := u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; a == "" {
				t.Errorf("no last-applied-configuration annotation, as kubectl apply adds")
			}
		})
	}
}

func TestServerBodyLimit(t *testing.T) {
	s := widgetServer(t)
	body := `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "` +
		strings.Repeat("x", offline.MaxRequestBodyBytes/2) + `"}}, "spec": {"max": 1}}`
	_, _, err := s.Apply(context.Background(), "f.yaml", []byte(body), nil)
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("got %v, want the apiserver's 413 (the annotation kubectl adds doubles the body)", err)
	}
}

func TestAdmission(t *testing.T) {
	adm, err := offline.NewAdmission()
	if err != nil {
		t.Fatal(err)
	}
	c, err := check.New(check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admit := func(doc string) *offline.Object {
		t.Helper()
		body, err := yaml.YAMLToJSON([]byte("apiVersion: control.kubestellar.io/v1alpha1\n" + doc))
		if err != nil {
			t.Fatal(err)
		}
		o, ok := adm.Admit(ctx, "f.yaml", body)
		if !ok {
			t.Fatalf("not one of statusfold's kinds:\n%s", doc)
		}
		o.Check(ctx, c)
		return o
	}

	// limit 0: the schema's minimum would reject it, but the defaulting webhook runs first.
	o := admit("kind: StatusCollector\nmetadata: {name: zero}\nspec: {limit: 0, combinedFields: [{name: count, type: COUNT}]}")
	if o.Err != nil {
		t.Fatalf("limit 0: %v", o.Err)
	}
	if got := o.Typed.(*controlv1alpha1.StatusCollector).Spec.Limit; got != controlv1alpha1.DefaultLimit {
		t.Errorf("limit %d, want %d", got, controlv1alpha1.DefaultLimit)
	}

	// A schema error: the validating webhook is never reached.
	o = admit("kind: StatusCollector\nmetadata: {name: num}\nspec: {combinedFields: [{name: total, type: SUM, subject: 5}]}")
	want := `The StatusCollector "num" is invalid: spec.combinedFields[0].subject: Invalid value: "integer": spec.combinedFields[0].subject in body must be of type string: "integer"`
	if got := kubectltest.Message(o.Err, "f.yaml"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// The webhook's check, with its name in the apiserver's message.
	o = admit("kind: StatusCollector\nmetadata: {name: empty}\nspec: {filter: 'true'}")
	want = `The StatusCollector "empty" is invalid: spec.combinedFields: Required value: one of select or combinedFields is required`
	if got := kubectltest.Message(o.Err, "f.yaml"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if st := o.Err.(apierrors.APIStatus).Status(); !strings.HasPrefix(st.Message, `admission webhook "vstatuscollector.statusfold.dev" denied the request: `) {
		t.Errorf("status message %q does not name the webhook", st.Message)
	}

	// A metadata that does not decode is kubectl's decoding error, not a document to skip.
	for _, meta := range []string{"[]", `"x"`, "5"} {
		o = admit("kind: StatusCollector\nmetadata: " + meta + "\nspec: {combinedFields: [{name: n, type: COUNT}]}")
		var ce *offline.ClientError
		if !errors.As(o.Err, &ce) {
			t.Errorf("metadata %s: got %v, want kubectl's decoding error", meta, o.Err)
			continue
		}
		if got, want := kubectltest.Message(o.Err, "f.yaml"), `error: unable to decode "f.yaml": json: cannot unmarshal`; !strings.HasPrefix(got, want) ||
			!strings.HasSuffix(got, "into Go struct field metadataOnlyObject.metadata of type v1.ObjectMeta") {
			t.Errorf("metadata %s: got\n%s\nwant kubectl's %q...", meta, got, want)
		}
	}

	// Other kinds are not ours.
	if _, ok := adm.Admit(ctx, "f.yaml", []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`)); ok {
		t.Error("a ConfigMap was taken for one of statusfold's kinds")
	}
}

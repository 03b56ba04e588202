package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/statusfold/statusfold/test/framework"
)

// apiExamples reads every YAML document of the API's testdata: the examples of KubeStellar's
// docs and objects as KubeStellar writes them.
func apiExamples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "api", "control", "v1alpha1", "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

// TestAPIExamplesRoundTrip creates every example of the API's testdata with strict field validation (an unknown
// field fails the create) and checks that what is read back holds the same content.
func TestAPIExamplesRoundTrip(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	for _, u := range apiExamples(t) {
		t.Run(u.GetKind()+"/"+u.GetName(), func(t *testing.T) {
			gvk := u.GroupVersionKind()
			mapping, err := cp.RESTMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatal(err)
			}
			want := u.DeepCopy()
			for _, f := range []string{"creationTimestamp", "generation", "resourceVersion", "uid"} {
				unstructured.RemoveNestedField(u.Object, "metadata", f)
			}
			ri := cp.Dynamic.Resource(mapping.Resource)
			if ns := u.GetNamespace(); ns != "" {
				ensureNamespace(t, cp, ns)
				_, err = ri.Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
			} else {
				_, err = ri.Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
			}
			if err != nil {
				t.Fatalf("create with strict field validation: %v", err)
			}
			var got *unstructured.Unstructured
			if ns := u.GetNamespace(); ns != "" {
				got, err = ri.Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
			} else {
				got, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, top := range []string{"spec", "results", "statusDetails"} {
				w, _, _ := unstructured.NestedFieldNoCopy(want.Object, top)
				g, _, _ := unstructured.NestedFieldNoCopy(got.Object, top)
				if w == nil {
					continue
				}
				if top == "spec" && gvk.Kind == "StatusCollector" {
					// The schema defaults limit to 20 when the example omits it.
					if _, has := w.(map[string]any)["limit"]; !has {
						w.(map[string]any)["limit"] = int64(20)
					}
				}
				if !equality.Semantic.DeepEqual(framework.JSONRoundTrip(t, w), framework.JSONRoundTrip(t, g)) {
					t.Errorf("%s differs after round trip:\nwant %#v\ngot  %#v", top, w, g)
				}
			}
			if gvk.Kind == "WorkStatus" {
				// WorkStatus has a status subresource: the agent writes .status there.
				got.Object["status"] = want.Object["status"]
				upd, err := ri.Namespace(u.GetNamespace()).UpdateStatus(ctx, got, metav1.UpdateOptions{FieldValidation: "Strict"})
				if err != nil {
					t.Fatalf("update status: %v", err)
				}
				if !equality.Semantic.DeepEqual(framework.JSONRoundTrip(t, want.Object["status"]), framework.JSONRoundTrip(t, upd.Object["status"])) {
					t.Errorf("status differs: %#v", upd.Object["status"])
				}
			}
		})
	}
}

// TestSchemaRejects checks what the CRD schemas refuse by themselves (schemaRejected).
func TestSchemaRejects(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	for _, tc := range schemaRejected {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := cp.Kubectl(ctx, []byte(tc.yaml), "create", "--validate=strict", "-f", "-")
			if err == nil {
				t.Fatalf("created, want rejection containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error %q does not contain %q", stderr, w)
				}
			}
		})
	}
}

// schemaRejected are objects that the CRD schemas refuse: want lists what kubectl's error must
// contain.
var schemaRejected = []struct {
	name string
	yaml string
	want []string
}{
	{"bad aggregator type", `
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: bad-type}
spec:
  combinedFields: [{name: n, type: MEDIAN, subject: returned.status.replicas}]
`, []string{`spec.combinedFields[0].type`, `Unsupported value: "MEDIAN"`}},
	{"limit 0", `
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: limit-zero}
spec:
  combinedFields: [{name: n, type: COUNT}]
  limit: 0
`, []string{`spec.limit`, `should be greater than or equal to 1`}},
	{"missing column name", `
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: no-name}
spec:
  select: [{def: inventory.name}]
`, []string{`spec.select[0].name`, `Required value`}},
	{"missing aggregator name", `
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: no-agg-name}
spec:
  combinedFields: [{type: COUNT}]
`, []string{`spec.combinedFields[0].name`, `Required value`}},
	{"unknown field (pre-0.26 statusCollection shape)", `
apiVersion: control.kubestellar.io/v1alpha1
kind: BindingPolicy
metadata: {name: old-shape}
spec:
  downsync:
  - resources: ["*"]
    statusCollection: {statusCollectors: [count-wecs]}
`, []string{`unknown field "spec.downsync[0].statusCollection"`}},
	{"bad value type", `
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata: {name: bad-value, namespace: default}
results:
- name: c
  columnNames: [x]
  rows: [{columns: [{type: Integer, float: "1"}]}]
`, []string{`results[0].rows[0].columns[0].type`, `Unsupported value: "Integer"`}},
	{"row errors in the earlier form", `
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata: {name: old-errors, namespace: default}
results:
- name: c
  columnNames: [x]
  errors: [{wec: cluster1, columnName: x, error: e}]
`, []string{`unknown field "results[0].errors"`}},
	{"a row error's WEC is a destination", `
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata: {name: old-wec, namespace: default}
results:
- name: c
  columnNames: [x]
  rowErrors: [{wec: cluster1, columnName: x, error: e}]
`, []string{`results[0].rowErrors[0].wec`, `must be of type object`}},
	{"bad condition status", `
apiVersion: control.kubestellar.io/v1alpha1
kind: WorkStatus
metadata: {name: ws, namespace: default}
spec:
  sourceRef: {group: apps, namespace: default}
statusDetails:
  lastGeneration: "one"
`, []string{`statusDetails.lastGeneration`, `Invalid value`}},
}

// TestKubectlExplain checks that the field docs reach `kubectl explain`.
func TestKubectlExplain(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	var out, stderr string
	var err error
	// The apiserver publishes new CRDs' OpenAPI a moment after they are established.
	for i := 0; i < 50; i++ {
		out, stderr, err = cp.Kubectl(ctx, nil, "explain", "statuscollector.spec.combinedFields.type")
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("kubectl explain: %v: %s", err, stderr)
	}
	t.Logf("kubectl explain statuscollector.spec.combinedFields.type:\n%s", out)
	for _, want := range []string{"StatusCollector", "COUNT counts the group's rows", "ENUM:", "    AVG\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}

package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func newObject(t *testing.T, kind string) runtime.Object {
	t.Helper()
	s := runtime.NewScheme()
	if err := controlv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	obj, err := s.New(controlv1alpha1.GroupVersion.WithKind(kind))
	if err != nil {
		t.Fatalf("kind %q: %v", kind, err)
	}
	return obj
}

// TestSeedYAMLRoundTrip decodes every seed example strictly into its Go type (an unknown or
// misspelt field fails), encodes it again, and checks that nothing was lost or renamed.
func TestSeedYAMLRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
				continue
			}
			kinds[meta.Kind]++
			t.Run(filepath.Base(f)+"/"+meta.Kind, func(t *testing.T) {
				obj := newObject(t, meta.Kind)
				if err := yaml.UnmarshalStrict(doc, obj); err != nil {
					t.Fatalf("strict decode: %v", err)
				}
				got, err := json.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				var want, back map[string]any
				if err := yaml.Unmarshal(doc, &want); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(got, &back); err != nil {
					t.Fatal(err)
				}
				if diff := lostOrChanged("", want, back); diff != "" {
					t.Errorf("round trip lost or changed %s:\nwant %v\ngot  %v", diff, want, back)
				}
				cp := obj.DeepCopyObject()
				if !equality.Semantic.DeepEqual(obj, cp) {
					t.Errorf("DeepCopyObject differs")
				}
			})
		}
	}
	for _, k := range []string{"StatusCollector", "BindingPolicy", "CombinedStatus", "ContentClassifier", "WorkStatus"} {
		if kinds[k] == 0 {
			t.Errorf("no %s example in testdata", k)
		}
	}
}

// TestStrictDecodeRejectsOldShape checks that the pre-0.26 `statusCollection` wrapper is an
// unknown field, not silently dropped.
func TestStrictDecodeRejectsOldShape(t *testing.T) {
	doc := []byte(`
apiVersion: control.kubestellar.io/v1alpha1
kind: BindingPolicy
metadata: {name: old}
spec:
  downsync:
  - resources: ["*"]
    statusCollection: {statusCollectors: [a]}
`)
	var bp controlv1alpha1.BindingPolicy
	err := yaml.UnmarshalStrict(doc, &bp)
	if err == nil {
		t.Fatal("strict decode accepted statusCollection")
	}
	if !bytes.Contains([]byte(err.Error()), []byte(`unknown field "statusCollection"`)) {
		t.Errorf("error %q does not name the field", err)
	}
}

// TestValueJSON pins the CombinedStatus value union's JSON field names and shape (KubeStellar
// v0.30.0's): an Object or Array holds plain JSON, and row errors name the WEC as a destination.
func TestValueJSON(t *testing.T) {
	n, s, b := "2", "x", true
	res := controlv1alpha1.NamedStatusCombination{
		Name:        "c",
		ColumnNames: []string{"n", "s", "b", "z", "o", "a"},
		Rows: []controlv1alpha1.StatusCombinationRow{{Columns: []controlv1alpha1.Value{
			{Type: controlv1alpha1.TypeNumber, Number: &n},
			{Type: controlv1alpha1.TypeString, String: &s},
			{Type: controlv1alpha1.TypeBool, Bool: &b},
			{Type: controlv1alpha1.TypeNull},
			{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: []byte(`{"phase":"Running","replicas":3}`)}},
			{Type: controlv1alpha1.TypeArray, Array: &apiextensionsv1.JSON{Raw: []byte(`[1,"a"]`)}},
		}}},
		RowErrors:         []controlv1alpha1.RowEvaluationError{{WEC: controlv1alpha1.Destination{ClusterId: "cluster1"}, ColumnName: "", Error: "e"}},
		AggregationErrors: []controlv1alpha1.ErrorInColumn{{ColumnName: "n", Error: "e", Row: 1, Count: 2}},
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"c","columnNames":["n","s","b","z","o","a"],"rows":[{"columns":[` +
		`{"type":"Number","float":"2"},{"type":"String","string":"x"},{"type":"Bool","bool":true},{"type":"Null"},` +
		`{"type":"Object","object":{"phase":"Running","replicas":3}},{"type":"Array","array":[1,"a"]}]}],` +
		`"rowErrors":[{"wec":{"clusterId":"cluster1"},"columnName":"","error":"e"}],` +
		`"aggregationErrors":[{"columnName":"n","error":"e","row":1,"count":2}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var back controlv1alpha1.NamedStatusCombination
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, res) {
		t.Errorf("round trip: got %+v, want %+v", back, res)
	}
}

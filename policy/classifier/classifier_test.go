package classifier

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// classifierOpt changes a ContentClassifier under construction.
type classifierOpt func(*controlv1alpha1.ContentClassifier)

func dontPropagate(ptrs ...controlv1alpha1.JSONPointer) classifierOpt {
	return func(cc *controlv1alpha1.ContentClassifier) {
		cc.Spec.DontPropagatePointers = append(cc.Spec.DontPropagatePointers, ptrs...)
	}
}

func desired(ptrs ...controlv1alpha1.JSONPointer) classifierOpt {
	return func(cc *controlv1alpha1.ContentClassifier) {
		cc.Spec.DesiredStatePointers = append(cc.Spec.DesiredStatePointers, ptrs...)
	}
}

func newClassifier(name string, opts ...classifierOpt) *controlv1alpha1.ContentClassifier {
	cc := &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(cc)
	}
	return cc
}

func ptr(toks ...string) controlv1alpha1.JSONPointer { return toks }

var (
	namePath    = field.NewPath("metadata", "name")
	desiredPath = field.NewPath("spec", "desiredStatePointers")
	dontPath    = field.NewPath("spec", "dontPropagatePointers")
)

func TestParseName(t *testing.T) {
	tests := []struct {
		name    string
		want    schema.GroupVersionResource
		wantErr field.ErrorList
	}{
		{name: "jobs.v1.batch", want: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}},
		{name: "pods.v1", want: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{name: "networkpolicies.v1.networking.k8s.io", want: schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}},
		{name: "widgets.v2alpha3.example.com", want: schema.GroupVersionResource{Group: "example.com", Version: "v2alpha3", Resource: "widgets"}},
		{name: "cronjobs.v1beta1.batch", want: schema.GroupVersionResource{Group: "batch", Version: "v1beta1", Resource: "cronjobs"}},
		{name: "jobs", wantErr: field.ErrorList{field.Invalid(namePath, "jobs", MsgNameFormat)}},
		{name: "", wantErr: field.ErrorList{field.Invalid(namePath, "", MsgNameFormat)}},
		{name: "jobs.1.batch", wantErr: field.ErrorList{field.Invalid(namePath, "jobs.1.batch", `version "1": `+MsgVersionFormat)}},
		{name: "jobs.v0.batch", wantErr: field.ErrorList{field.Invalid(namePath, "jobs.v0.batch", `version "v0": `+MsgVersionFormat)}},
		{name: "jobs.v1gamma1.batch", wantErr: field.ErrorList{field.Invalid(namePath, "jobs.v1gamma1.batch", `version "v1gamma1": `+MsgVersionFormat)}},
		{name: "jobs.batch.v1", wantErr: field.ErrorList{field.Invalid(namePath, "jobs.batch.v1", `version "batch": `+MsgVersionFormat)}},
		{name: "Jobs.v1.batch", wantErr: field.ErrorList{field.Invalid(namePath, "Jobs.v1.batch", `resource "Jobs": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)}},
		{name: "jobs.v1.Batch_", wantErr: field.ErrorList{field.Invalid(namePath, "jobs.v1.Batch_", `group "Batch_": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`)}},
		{name: ".v1", wantErr: field.ErrorList{
			field.Invalid(namePath, ".v1", `resource "": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := ParseName(tt.name, namePath)
			if diff := cmp.Diff(tt.wantErr, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cc   *controlv1alpha1.ContentClassifier
		want field.ErrorList
	}{
		{name: "seed example", cc: newClassifier("jobs.v1.batch", dontPropagate(ptr("status", "ready")))},
		{name: "no pointers", cc: newClassifier("pods.v1")},
		{name: "desired outside status", cc: newClassifier("services.v1", desired(ptr("spec", "clusterIP")), dontPropagate(ptr("spec", "ipFamilies")))},
		{name: "whole status does not propagate", cc: newClassifier("pods.v1", dontPropagate(ptr("status")))},
		{name: "refinement in the other list is fine", cc: newClassifier("pods.v1", desired(ptr("spec")), dontPropagate(ptr("spec", "nodeName")))},
		{
			name: "empty desired pointer",
			cc:   newClassifier("pods.v1", desired(ptr())),
			want: field.ErrorList{field.Invalid(desiredPath.Index(0), []string{}, MsgEmptyPointer)},
		},
		{
			name: "nil dontPropagate pointer",
			cc:   newClassifier("pods.v1", dontPropagate(ptr("status", "x"), nil)),
			want: field.ErrorList{field.Invalid(dontPath.Index(1), []string{}, MsgEmptyPointer)},
		},
		{
			name: "status made desired",
			cc:   newClassifier("jobs.v1.batch", desired(ptr("spec"), ptr("status", "ready"))),
			want: field.ErrorList{field.Invalid(desiredPath.Index(1), []string{"status", "ready"}, MsgStatusIsReported)},
		},
		{
			name: "whole status made desired",
			cc:   newClassifier("jobs.v1.batch", desired(ptr("status"))),
			want: field.ErrorList{field.Invalid(desiredPath.Index(0), []string{"status"}, MsgStatusIsReported)},
		},
		{
			name: "duplicate in one list",
			cc:   newClassifier("jobs.v1.batch", dontPropagate(ptr("status", "ready"), ptr("status", "active"), ptr("status", "ready"))),
			want: field.ErrorList{field.Duplicate(dontPath.Index(2), []string{"status", "ready"})},
		},
		{
			name: "duplicate desired",
			cc:   newClassifier("jobs.v1.batch", desired(ptr("spec", "a"), ptr("spec", "a"))),
			want: field.ErrorList{field.Duplicate(desiredPath.Index(1), []string{"spec", "a"})},
		},
		{
			name: "in both lists: reported on the dontPropagate entry",
			cc:   newClassifier("jobs.v1.batch", desired(ptr("spec", "x"), ptr("spec", "suspend")), dontPropagate(ptr("spec", "suspend"))),
			want: field.ErrorList{field.Invalid(dontPath.Index(0), []string{"spec", "suspend"},
				"also listed in spec.desiredStatePointers[1]; a part of the object cannot be both desired state and not propagated")},
		},
		{
			name: "everything at once",
			cc: newClassifier("jobs", desired(ptr("status", "a"), ptr()),
				dontPropagate(ptr("status", "a"), ptr("status", "a"))),
			want: field.ErrorList{
				field.Invalid(namePath, "jobs", MsgNameFormat),
				field.Invalid(desiredPath.Index(0), []string{"status", "a"}, MsgStatusIsReported),
				field.Invalid(desiredPath.Index(1), []string{}, MsgEmptyPointer),
				field.Duplicate(dontPath.Index(1), []string{"status", "a"}),
				field.Invalid(dontPath.Index(0), []string{"status", "a"}, "also listed in spec.desiredStatePointers[0]; a part of the object cannot be both desired state and not propagated"),
				field.Invalid(dontPath.Index(1), []string{"status", "a"}, "also listed in spec.desiredStatePointers[0]; a part of the object cannot be both desired state and not propagated"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.cc)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	errs := Validate(newClassifier("jobs.v1.batch", desired(ptr("status", "ready"))))
	want := `spec.desiredStatePointers[0]: Invalid value: ["status","ready"]: no part of .status can be made desired state`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v, want %q", errs, want)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		p    controlv1alpha1.JSONPointer
		want string
	}{
		{p: nil, want: ""},
		{p: ptr("status", "ready"), want: "/status/ready"},
		{p: ptr("metadata", "annotations", "a/b~c"), want: "/metadata/annotations/a~1b~0c"},
		{p: ptr(""), want: "/"},
	}
	for _, tt := range tests {
		if got := String(tt.p); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// js decodes a JSON literal, as the controller's status values are decoded.
func js(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name   string
		cc     *controlv1alpha1.ContentClassifier
		status string
		want   string
	}{
		{name: "nil classifier", cc: nil, status: `{"ready":1}`, want: `{"ready":1}`},
		{name: "seed: jobs status.ready", cc: newClassifier("jobs.v1.batch", dontPropagate(ptr("status", "ready"))),
			status: `{"ready":1,"active":2}`, want: `{"active":2}`},
		{name: "absent field", cc: newClassifier("jobs.v1.batch", dontPropagate(ptr("status", "ready"))),
			status: `{"active":2}`, want: `{"active":2}`},
		{name: "pointers outside status are not applied", cc: newClassifier("jobs.v1.batch", dontPropagate(ptr("spec", "ready"), ptr("ready"))),
			status: `{"ready":1}`, want: `{"ready":1}`},
		{name: "nested", cc: newClassifier("deployments.v1.apps", dontPropagate(ptr("status", "a", "b"))),
			status: `{"a":{"b":1,"c":2},"d":3}`, want: `{"a":{"c":2},"d":3}`},
		{name: "through a scalar is a no-op", cc: newClassifier("deployments.v1.apps", dontPropagate(ptr("status", "a", "b"))),
			status: `{"a":5}`, want: `{"a":5}`},
		{name: "list element", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "conditions", "1"))),
			status: `{"conditions":[{"t":"a"},{"t":"b"},{"t":"c"}]}`, want: `{"conditions":[{"t":"a"},{"t":"c"}]}`},
		{name: "two list elements by original index", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "l", "0"), ptr("status", "l", "1"))),
			status: `{"l":[0,1,2]}`, want: `{"l":[2]}`},
		{name: "field inside list element", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "l", "1", "x"))),
			status: `{"l":[{"x":1},{"x":2,"y":3}]}`, want: `{"l":[{"x":1},{"y":3}]}`},
		{name: "leading zero and dash are not indices", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "l", "01"), ptr("status", "l", "-"))),
			status: `{"l":[0,1,2]}`, want: `{"l":[0,1,2]}`},
		{name: "index out of range", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "l", "7"))),
			status: `{"l":[0]}`, want: `{"l":[0]}`},
		{name: "numeric token on a map is a key", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "m", "0"))),
			status: `{"m":{"0":"x","1":"y"}}`, want: `{"m":{"1":"y"}}`},
		{name: "shorter pointer wins", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "a", "b"), ptr("status", "a"))),
			status: `{"a":{"b":1},"c":1}`, want: `{"c":1}`},
		{name: "shorter pointer first", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "a"), ptr("status", "a", "b"))),
			status: `{"a":{"b":1},"c":1}`, want: `{"c":1}`},
		{name: "whole status", cc: newClassifier("pods.v1", dontPropagate(ptr("status"))),
			status: `{"a":1}`, want: `null`},
		{name: "null status", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "a"))),
			status: `null`, want: `null`},
		{name: "invalid entry in both lists is ignored", cc: newClassifier("pods.v1", desired(ptr("status", "a")), dontPropagate(ptr("status", "a"), ptr("status", "b"))),
			status: `{"a":1,"b":2}`, want: `{"a":1}`},
		{name: "escaped key", cc: newClassifier("pods.v1", dontPropagate(ptr("status", "a/b"))),
			status: `{"a/b":1,"a":{"b":2}}`, want: `{"a":{"b":2}}`},
		{name: "empty key", cc: newClassifier("pods.v1", dontPropagate(ptr("status", ""))),
			status: `{"":1,"a":2}`, want: `{"a":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := js(t, tt.status)
			before := js(t, tt.status)
			got := Prune(in, tt.cc)
			if diff := cmp.Diff(js(t, tt.want), got); diff != "" {
				t.Errorf("pruned (-want +got):\n%s", diff)
			}
			if !reflect.DeepEqual(in, before) {
				t.Errorf("input was modified: %v", in)
			}
		})
	}
}

func TestPruneSharesUnchanged(t *testing.T) {
	in := js(t, `{"a":{"x":1},"b":{"y":2}}`).(map[string]any)
	out := Prune(in, newClassifier("pods.v1", dontPropagate(ptr("status", "a", "x")))).(map[string]any)
	if reflect.ValueOf(out["b"]).UnsafePointer() != reflect.ValueOf(in["b"]).UnsafePointer() {
		t.Error("untouched sub-map was copied")
	}
	same := Prune(in, newClassifier("pods.v1", dontPropagate(ptr("status", "zzz"))))
	if reflect.ValueOf(same).UnsafePointer() != reflect.ValueOf(in).UnsafePointer() {
		t.Error("status without matches was copied")
	}
}

func TestStatusPointers(t *testing.T) {
	cc := newClassifier("pods.v1", desired(ptr("status", "dup")),
		dontPropagate(ptr("spec", "x"), ptr(), ptr("status"), ptr("status", "a", "b"), ptr("status", "dup")))
	want := []controlv1alpha1.JSONPointer{{}, {"a", "b"}}
	if diff := cmp.Diff(want, StatusPointers(cc)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := StatusPointers(nil); got != nil {
		t.Errorf("nil classifier: %v", got)
	}
}

// FuzzPrune checks, for arbitrary JSON statuses and pointers, that Prune never panics, never
// modifies its input, and leaves nothing at a removed map path.
func FuzzPrune(f *testing.F) {
	f.Add(`{"ready":1,"conditions":[{"type":"A"},{"type":"B"}]}`, "ready", "conditions", "1")
	f.Add(`[1,2,3]`, "0", "", "x")
	f.Add(`"s"`, "a", "b", "c")
	f.Add(`{"a":{"b":{"c":null}}}`, "a", "b", "c")
	f.Fuzz(func(t *testing.T, status, t1, t2, t3 string) {
		var in, before any
		if json.Unmarshal([]byte(status), &in) != nil {
			return
		}
		_ = json.Unmarshal([]byte(status), &before)
		cc := newClassifier("pods.v1", dontPropagate(ptr("status", t1), ptr("status", t1, t2, t3), ptr("status", t2)))
		out := Prune(in, cc)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("input modified")
		}
		if m, ok := out.(map[string]any); ok {
			for _, k := range []string{t1, t2} {
				if _, present := m[k]; present {
					t.Fatalf("key %q still present in %v", k, out)
				}
			}
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("result not JSON: %v", err)
		}
		_ = fmt.Sprint(out)
	})
}

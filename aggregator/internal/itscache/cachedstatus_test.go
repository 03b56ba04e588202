package itscache

import (
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

func TestTrimITSObjectDecodesTheStatusOnce(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		want   any  // what the readers get
		decode bool // the raw JSON is dropped
		err    bool
	}{
		{"object", `{"replicas":3,"ready":2.5,"conditions":[{"type":"Available","status":"True"}]}`,
			map[string]any{"replicas": int64(3), "ready": 2.5, "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}, true, false},
		{"scalar", `"Running"`, "Running", true, false},
		{"null", `null`, nil, true, false},
		{"absent", ``, nil, false, false},
		{"not JSON: its error shows when read", `{"a":`, nil, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "ws"}}
			if tc.raw != "" {
				ws.Status.Raw = []byte(tc.raw)
			}
			before, beforeErr := WorkStatusStatus(ws)
			out, err := TrimITSObject(ws)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*controlv1alpha1.WorkStatus)
			if decoded := got.Status.Raw == nil && tc.raw != ""; decoded != tc.decode {
				t.Errorf("raw status dropped = %v, want %v", decoded, tc.decode)
			}
			held, afterErr := WorkStatusStatus(got)
			if (afterErr != nil) != tc.err || (beforeErr != nil) != tc.err {
				t.Fatalf("errors before/after the transform = %v / %v, want an error: %v", beforeErr, afterErr, tc.err)
			}
			if _, isMap := tc.want.(map[string]any); isMap {
				if _, compact := held.(*compactjson.Object); !compact {
					t.Errorf("the cache holds the status as %T, want it compact", held)
				}
			}
			after := compactjson.Expand(held)
			if !reflect.DeepEqual(after, tc.want) || !reflect.DeepEqual(before, after) {
				t.Errorf("status after the transform = %#v, before %#v, want %#v", after, before, tc.want)
			}
			// A deep copy (what a cache read without UnsafeDisableDeepCopy returns) reads the same.
			if cp, _ := WorkStatusStatus(got.DeepCopy()); cp != held || !reflect.DeepEqual(compactjson.Expand(cp), tc.want) {
				t.Errorf("status of a deep copy = %#v, want %#v", cp, tc.want)
			}
		})
	}
}

func TestTrimITSObjectInternsRepeatedStrings(t *testing.T) {
	a := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1))
	b := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 2, testutil.DeploymentStatus(2))
	for _, ws := range []*controlv1alpha1.WorkStatus{a, b} {
		if _, err := TrimITSObject(ws); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string", what, x, y)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("name", a.Name, b.Name)
	same("sourceRef.name", a.Spec.SourceRef.Name, b.Spec.SourceRef.Name)
	same("sourceRef.resource", a.Spec.SourceRef.Resource, b.Spec.SourceRef.Resource)
	same("label value", a.Labels[controlv1alpha1.LabelOriginWDSName], b.Labels[controlv1alpha1.LabelOriginWDSName])
	for k := range a.Labels {
		for k2 := range b.Labels {
			same("label key", k, k2)
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Errorf("equal label sets are two maps, want one shared map")
	}
	c := testutil.WireWorkStatus(t, "wec-0002", "app-0001", 3, nil)
	c.Labels["other"] = "x"
	if _, err := TrimITSObject(c); err != nil {
		t.Fatal(err)
	}
	if len(c.Labels) != 2 || c.Labels["other"] != "x" || len(a.Labels) != 1 {
		t.Errorf("labels of another set = %v (first set %v), want their own", c.Labels, a.Labels)
	}
	heldA, _ := WorkStatusStatus(a)
	if _, ok := heldA.(*compactjson.Object); !ok {
		t.Fatalf("the cached status is a %T, want it compact", heldA)
	}
}

// TestTrimITSObjectIsIdempotent: a WorkStatus transformed again (client-go may pass objects already
// in the cache to the transform) reads the same, and its shared maps are not written (-race: a
// reader of the cached object runs meanwhile).
func TestTrimITSObjectIsIdempotent(t *testing.T) {
	ws := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1))
	if _, err := TrimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	want := ws.DeepCopy()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			for k, v := range ws.Labels {
				_, _ = k, v
			}
		}
	}()
	for range 100 {
		if _, err := TrimITSObject(ws); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("after transforming again:\n got %+v\nwant %+v", ws, want)
	}
}

func TestStringTableIsBoundedAndShares(t *testing.T) {
	tab := newStringTable(2)
	dup := func(s string) string { return string([]byte(s)) } // an equal string, another copy
	a := tab.intern(dup("a"))
	if got := tab.intern(dup("a")); unsafe.StringData(got) != unsafe.StringData(a) {
		t.Errorf("interning an equal string gave another copy")
	}
	tab.intern(dup("b"))
	tab.intern(dup("c")) // full: starts afresh
	if n := len(tab.m); n > 2 {
		t.Errorf("table holds %d strings, want at most 2", n)
	}
	if got := tab.intern(dup("a")); got != "a" {
		t.Errorf("intern after a reset = %q, want %q", got, "a")
	}
	if got := tab.intern(""); got != "" {
		t.Errorf("intern of the empty string = %q", got)
	}
}

// BenchmarkTrimITSObject is the informer's cost per WorkStatus event of the transform (decoding
// and compacting a Deployment-shaped status), work that evaluations used to do instead.
func BenchmarkTrimITSObject(b *testing.B) {
	ws := testutil.WireWorkStatus(b, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1))
	raw, managed := ws.Status.Raw, ws.ManagedFields
	for b.Loop() {
		ws.Status.Raw, ws.Status.Object, ws.ManagedFields = raw, nil, managed
		if _, err := TrimITSObject(ws); err != nil {
			b.Fatal(err)
		}
	}
}

package objview

import (
	"reflect"
	"testing"
)

func TestOf(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "d", "generation": int64(3), "labels": map[string]any{"a": "b"},
			"resourceVersion": "42", "managedFields": []any{map[string]any{"manager": "m"}},
		},
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"readyReplicas": int64(1)},
	}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "d", "generation": int64(3), "labels": map[string]any{"a": "b"}},
		"spec":       map[string]any{"replicas": int64(2)},
	}
	if got := Of(obj); !reflect.DeepEqual(got, want) {
		t.Errorf("Of = %v, want %v", got, want)
	}
	// The input is untouched.
	if _, ok := obj["status"]; !ok {
		t.Error("Of removed status from its input")
	}
	if md := obj["metadata"].(map[string]any); md["resourceVersion"] != "42" || md["managedFields"] == nil {
		t.Errorf("Of changed its input's metadata: %v", md)
	}
	// Two writes that differ only in status, resourceVersion and managedFields have equal views.
	other := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "d", "generation": int64(3), "labels": map[string]any{"a": "b"}, "resourceVersion": "43"},
		"spec":       map[string]any{"replicas": int64(2)},
		"status":     map[string]any{"readyReplicas": int64(2)},
	}
	if !reflect.DeepEqual(Of(obj), Of(other)) {
		t.Error("views of a status-only change differ")
	}
	if Of(nil) != nil {
		t.Error("Of(nil) is not nil")
	}
	noMeta := map[string]any{"kind": "X", "status": "s"}
	if got := Of(noMeta); !reflect.DeepEqual(got, map[string]any{"kind": "X"}) {
		t.Errorf("Of without metadata = %v", got)
	}
}

// CopyTree copies every map and list, so changing the copy leaves the original as it was, and
// keeps the values and a nil list as they are.
func TestCopyTree(t *testing.T) {
	var nilList []any
	orig := map[string]any{"a": []any{map[string]any{"b": int64(1)}, "s"}, "n": nilList, "f": 1.5}
	cp := CopyTree(orig).(map[string]any)
	if !reflect.DeepEqual(cp, orig) {
		t.Fatalf("copy %v, want %v", cp, orig)
	}
	if l, ok := cp["n"].([]any); !ok || l != nil {
		t.Errorf("nil list copied as %#v", cp["n"])
	}
	cp["a"].([]any)[0].(map[string]any)["b"] = int64(2)
	cp["a"].([]any)[1] = "changed"
	cp["f"] = 0.0
	if orig["a"].([]any)[0].(map[string]any)["b"] != int64(1) || orig["a"].([]any)[1] != "s" || orig["f"] != 1.5 {
		t.Errorf("changing the copy changed the original: %v", orig)
	}
}

package writer

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Reading the apiserver's errors: which fields a server-side apply conflict or an Invalid error
// names, and removing those fields from an apply object so the rest can be written.

// apiStatus returns the API status carried by err, if any.
func apiStatus(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &s
	}
	return nil
}

// ConflictFields lists the field paths (".status.readyReplicas") of a server-side apply conflict.
func ConflictFields(err error) []string {
	var out []string
	if st := apiStatus(err); st != nil && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict && c.Field != "" {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// InvalidStatusFields lists the status fields ("status.completionTime") an Invalid error names.
func InvalidStatusFields(err error) []string {
	var out []string
	if st := apiStatus(err); st != nil && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type != metav1.CauseTypeFieldManagerConflict && strings.HasPrefix(strings.TrimPrefix(c.Field, "."), "status.") {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// RemoveFields deletes the fields at the given paths (".a.b", or ".a.b[key=...]..." which removes
// ".a.b") from obj, and reports whether any was present. A path does not quote its map keys, so a
// key with dots (".status.byHost.node-1.example.com") is found by trying the object's own keys.
func RemoveFields(obj map[string]any, paths []string) bool {
	removed := false
	for _, p := range paths {
		p, _, _ = strings.Cut(p, "[")
		keys, found := resolveKeys(obj, strings.Split(strings.TrimPrefix(p, "."), "."))
		if !found || len(keys) < 2 { // never the whole status, metadata, ...
			continue
		}
		unstructured.RemoveNestedField(obj, keys...)
		removed = true
	}
	return removed
}

// resolveKeys maps the dot-separated segments of a path onto the keys of m, joining segments
// where a key itself holds dots; the shortest keys are tried first.
func resolveKeys(m map[string]any, segs []string) ([]string, bool) {
	for n := 1; n <= len(segs); n++ {
		key := strings.Join(segs[:n], ".")
		v, ok := m[key]
		if !ok {
			continue
		}
		if n == len(segs) {
			return []string{key}, true
		}
		if child, isMap := v.(map[string]any); isMap {
			if rest, found := resolveKeys(child, segs[n:]); found {
				return append([]string{key}, rest...), true
			}
		}
	}
	return nil, false
}

// IsTooLarge reports whether the apiserver refused a write because the object is too large: HTTP
// 413 (the apiserver's "Request entity too large", which is also its answer when etcd refuses
// the transaction), or etcd's own "request is too large" and gRPC's message-size refusal passed
// through as text. Such a write is never retried as it is: the writer makes it smaller at once
// (docs/rules.md "Size budget").
func IsTooLarge(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "request is too large") || strings.Contains(msg, "request entity too large") ||
		strings.Contains(msg, "trying to send message larger than max")
}

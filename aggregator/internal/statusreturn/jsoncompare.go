package statusreturn

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/statusfold/statusfold/aggregator/internal/writer"
)

// Comparing JSON values: whether an object already holds what statusfold would write.

// contains reports whether have holds every field of want with an equal value (numbers compared
// by value, lists element by element).
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		if wf, ok := number(want); ok {
			hf, ok := number(have)
			return ok && hf == wf
		}
		return equality.Semantic.DeepEqual(have, want)
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// without decodes a status (JSON) into a fresh map and removes the fields at the given paths
// (see removeFields).
func without(statusJSON string, paths []string) map[string]any {
	if slices.Contains(paths, ".status") { // nothing of it was written
		return map[string]any{}
	}
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(statusJSON), &m); err != nil || m == nil {
		return nil
	}
	if len(paths) > 0 {
		obj := map[string]any{"status": m}
		writer.RemoveFields(obj, paths)
		m, _ = obj["status"].(map[string]any)
	}
	return m
}

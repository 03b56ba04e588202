package aggregator

import (
	"errors"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Schema skew (docs/controller.md, "Schema skew"): a WEC that runs a newer version of a kind than
// the WDS reports status fields the WDS's schema does not declare. A server-side apply of such a
// field fails as a whole for built-in kinds ("field not declared in schema"), so the returned
// status is pruned to the WDS's published schema first; what was dropped is reported, the rest is
// written.

const (
	extPreserveUnknown = "x-kubernetes-preserve-unknown-fields"
	extEmbedded        = "x-kubernetes-embedded-resource"
	extIntOrString     = "x-kubernetes-int-or-string"
)

// statusSchema returns the schema of the kind's `.status` as the WDS publishes it: nil with a nil
// error when the kind's schema declares no status (every field of a status is then undeclared),
// and an error when the schema cannot be read (the status is then applied unpruned).
func statusSchema(r resolver.SchemaResolver, gvk schema.GroupVersionKind) (*spec.Schema, bool, error) {
	if r == nil {
		return nil, false, errors.New("no schema resolver")
	}
	s, err := r.ResolveSchema(gvk)
	if err != nil {
		return nil, false, err
	}
	if preserves(s) {
		return nil, true, nil
	}
	st, ok := s.Properties["status"]
	if !ok {
		return nil, false, nil
	}
	return &st, false, nil
}

// pruneStatus removes from status the fields that the status schema s does not declare and
// returns the result and the paths removed (".status.extra", ".status.conditions[*].extra"),
// sorted. preserveAll: the kind keeps unknown fields everywhere (nothing is removed). status is
// not modified: maps and lists are copied where something under them is removed.
func pruneStatus(status map[string]any, s *spec.Schema, preserveAll bool) (map[string]any, []string) {
	if preserveAll || status == nil {
		return status, nil
	}
	dropped := map[string]bool{}
	if s == nil { // the kind declares no status: nothing of it can be written
		for k := range status {
			dropped[".status."+k] = true
		}
		return nil, slices.Sorted(maps.Keys(dropped))
	}
	out, _ := pruneValue(status, s, ".status", dropped)
	m, _ := out.(map[string]any)
	return m, slices.Sorted(maps.Keys(dropped))
}

// pruneValue prunes v against s (see pruneStatus); changed says whether anything was removed.
func pruneValue(v any, s *spec.Schema, path string, dropped map[string]bool) (any, bool) {
	if s == nil || extBool(s, extIntOrString) || extBool(s, extEmbedded) {
		return v, false
	}
	switch val := v.(type) {
	case map[string]any:
		// An object schema that declares no field and no value schema says nothing about the
		// shape: keep everything (the apiserver decides). Such a placeholder is also what a
		// recursive reference resolves to.
		if len(s.Properties) == 0 && (s.AdditionalProperties == nil || (s.AdditionalProperties.Schema == nil && !s.AdditionalProperties.Allows)) {
			return v, false
		}
		var out map[string]any
		for k, fv := range val {
			fs, known := s.Properties[k]
			var nv any
			changed := false
			switch {
			case known:
				nv, changed = pruneValue(fv, &fs, path+"."+k, dropped)
			case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
				nv, changed = pruneValue(fv, s.AdditionalProperties.Schema, path+"."+k, dropped)
			case (s.AdditionalProperties != nil && s.AdditionalProperties.Allows) || preserves(s):
				continue
			default:
				dropped[path+"."+k] = true
				if out == nil {
					out = maps.Clone(val)
				}
				delete(out, k)
				continue
			}
			if changed {
				if out == nil {
					out = maps.Clone(val)
				}
				out[k] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return v, false
		}
		var out []any
		for i, e := range val {
			ne, changed := pruneValue(e, s.Items.Schema, path+"[*]", dropped)
			if changed {
				if out == nil {
					out = slices.Clone(val)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

func preserves(s *spec.Schema) bool { return extBool(s, extPreserveUnknown) }

func extBool(s *spec.Schema, name string) bool {
	b, ok := s.Extensions.GetBool(name)
	return ok && b
}

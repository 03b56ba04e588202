// Package objview gives the workload object as the engines see it: without `.status`, and without
// the two metadata fields that every write changes — `metadata.resourceVersion` and
// `metadata.managedFields`. Collectors (`obj`) and aggregation modules (`input.object`) read this
// view, online and offline alike, so a write of the object's status (statusfold's own return
// included) does not change what they see and does not re-evaluate them.
package objview

// Of returns the view of obj. obj is not modified; the view shares everything else with it.
func Of(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	v := make(map[string]any, len(obj))
	for k, x := range obj {
		if k != "status" {
			v[k] = x
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		_, rv := md["resourceVersion"]
		_, mf := md["managedFields"]
		if rv || mf {
			m := make(map[string]any, len(md))
			for k, x := range md {
				if k != "resourceVersion" && k != "managedFields" {
					m[k] = x
				}
			}
			v["metadata"] = m
		}
	}
	return v
}

// CopyTree copies the maps and lists of a JSON value and shares its leaves (strings, numbers and
// booleans are immutable), so that what the engines return never shares a map or list with their
// inputs or with each other. A nil list stays nil.
func CopyTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = CopyTree(x)
		}
		return c
	case []any:
		if t == nil {
			return t
		}
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = CopyTree(x)
		}
		return c
	}
	return v
}

package writer

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/lru"
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

// FieldTree is a status schema compiled for pruning: which fields each object declares, down to
// the leaves. Our own walk, not apiextensions-apiserver's structural pruning: that prunes a custom
// resource against its CRD's structural schema, while the schemas here are the OpenAPI v3
// documents the apiserver publishes for every kind — built-in ones included, with
// x-kubernetes-int-or-string and embedded resources — and every dropped path is reported. Compiled once per published schema (fieldTrees), it makes pruning a walk of the
// status with one map lookup per field.
type FieldTree struct {
	none      bool                  // the kind declares no status: every field is dropped
	keep      bool                  // the value is kept as it is (int-or-string, embedded resource)
	preserve  bool                  // x-kubernetes-preserve-unknown-fields: unknown fields here are kept
	props     map[string]*FieldTree // the declared fields
	values    *FieldTree            // additionalProperties' schema: every map value
	anyValues bool                  // additionalProperties: true
	items     *FieldTree            // list items
}

func compileTree(s *spec.Schema) *FieldTree {
	t := &FieldTree{
		keep:     extBool(s, extIntOrString) || extBool(s, extEmbedded),
		preserve: extBool(s, extPreserveUnknown),
	}
	if t.keep {
		return t
	}
	if len(s.Properties) > 0 {
		t.props = make(map[string]*FieldTree, len(s.Properties))
		for k, v := range s.Properties {
			t.props[k] = compileTree(&v)
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		if ap.Schema != nil {
			t.values = compileTree(ap.Schema)
		} else {
			t.anyValues = ap.Allows
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		t.items = compileTree(s.Items.Schema)
	}
	return t
}

// fieldTrees caches the compiled trees by resolved schema: a resolver returns the same
// *spec.Schema while the published schema is unchanged (DiscoverySchemas re-reads a group
// version's document when its published hash changes), so a tree is compiled once per kind,
// schema version and use. Safe for concurrent use.
type fieldTrees struct {
	mu    sync.Mutex
	cache *lru.Cache // treeKey → *FieldTree (nil: keep everything)
}

// treeKey names a compiled tree: the kind's resolved root schema, and whether the tree is of the
// whole object (objectTree) or of its status (statusTree).
type treeKey struct {
	root  *spec.Schema
	whole bool
}

func newFieldTrees() *fieldTrees { return &fieldTrees{cache: lru.New(512)} }

// statusTree returns the compiled schema of the kind's `.status` as the WDS publishes it: nil
// when the kind keeps unknown fields everywhere (nothing is pruned), a tree with none set when
// the kind declares no status, and an error when the schema cannot be read.
func (f *fieldTrees) statusTree(r resolver.SchemaResolver, gvk schema.GroupVersionKind) (*FieldTree, error) {
	t, _, err := f.tree(r, gvk, false)
	return t, err
}

// objectTree returns the compiled schema of the kind's whole object as the apiserver serves it
// (apiVersion, kind and metadata kept as they are), and the resolved schema it was compiled from,
// which identifies the served version of the schema. The tree is nil when the kind keeps unknown
// fields at its root (nothing is pruned).
func (f *fieldTrees) objectTree(r resolver.SchemaResolver, gvk schema.GroupVersionKind) (*FieldTree, *spec.Schema, error) {
	return f.tree(r, gvk, true)
}

func (f *fieldTrees) tree(r resolver.SchemaResolver, gvk schema.GroupVersionKind, whole bool) (*FieldTree, *spec.Schema, error) {
	if r == nil {
		return nil, nil, errors.New("no schema resolver")
	}
	s, err := r.ResolveSchema(gvk)
	if err != nil {
		return nil, nil, err
	}
	key := treeKey{root: s, whole: whole}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.cache.Get(key); ok {
		return v.(*FieldTree), s, nil
	}
	var t *FieldTree
	st, hasStatus := s.Properties["status"]
	switch {
	case extBool(s, extPreserveUnknown):
	case whole:
		t = compileTree(s)
		if t.props == nil {
			t.props = map[string]*FieldTree{}
		}
		for _, k := range []string{"apiVersion", "kind", "metadata"} {
			t.props[k] = &FieldTree{keep: true}
		}
	case !hasStatus:
		t = &FieldTree{none: true}
	default:
		t = compileTree(&st)
	}
	f.cache.Add(key, t)
	return t, s, nil
}

// pruneObject removes from obj (a whole object, as sent in an apply) the fields that the object
// tree t does not declare, and returns the result and the paths removed (".status.conditions",
// ".results[*].aggregationErrors[*].row"), sorted. A nil t removes nothing. obj is not modified.
func pruneObject(obj map[string]any, t *FieldTree) (map[string]any, []string) {
	if t == nil || obj == nil {
		return obj, nil
	}
	var p pruner
	out, _ := p.value(obj, t)
	m, _ := out.(map[string]any)
	return m, p.sorted()
}

// PruneStatus removes from status the fields that the status tree t does not declare and
// returns the result and the paths removed (".status.extra", ".status.conditions[*].extra"),
// sorted. A nil t removes nothing. status is not modified: maps and lists are copied where
// something under them is removed.
func PruneStatus(status map[string]any, t *FieldTree) (map[string]any, []string) {
	if t == nil || status == nil {
		return status, nil
	}
	p := pruner{path: []string{".status"}}
	if t.none { // the kind declares no status: nothing of it can be written
		for k := range status {
			p.drop(k)
		}
		return nil, p.sorted()
	}
	out, _ := p.value(status, t)
	m, _ := out.(map[string]any)
	return m, p.sorted()
}

// pruner walks a status; path is the current field path, one segment per level, joined only
// for the fields it drops.
type pruner struct {
	path    []string
	dropped map[string]bool
}

func (p *pruner) drop(k string) {
	if p.dropped == nil {
		p.dropped = map[string]bool{}
	}
	p.dropped[strings.Join(p.path, "")+"."+k] = true
}

func (p *pruner) sorted() []string {
	if len(p.dropped) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(p.dropped))
}

// value prunes v against t; changed says whether anything was removed.
func (p *pruner) value(v any, t *FieldTree) (any, bool) {
	if t == nil || t.keep {
		return v, false
	}
	switch val := v.(type) {
	case map[string]any:
		// An object schema that declares no field and no value schema says nothing about the
		// shape: keep everything (the apiserver decides). Such a placeholder is also what a
		// recursive reference resolves to.
		if len(t.props) == 0 && t.values == nil && !t.anyValues {
			return v, false
		}
		var out map[string]any
		for k, fv := range val {
			ft, known := t.props[k]
			if !known {
				ft = t.values
			}
			if ft == nil {
				if t.anyValues || t.preserve {
					continue
				}
				p.drop(k)
				if out == nil {
					out = maps.Clone(val)
				}
				delete(out, k)
				continue
			}
			p.path = append(p.path, "."+k)
			nv, changed := p.value(fv, ft)
			p.path = p.path[:len(p.path)-1]
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
		if t.items == nil {
			return v, false
		}
		var out []any
		p.path = append(p.path, "[*]")
		for i, e := range val {
			if ne, changed := p.value(e, t.items); changed {
				if out == nil {
					out = slices.Clone(val)
				}
				out[i] = ne
			}
		}
		p.path = p.path[:len(p.path)-1]
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

func extBool(s *spec.Schema, name string) bool {
	b, ok := s.Extensions.GetBool(name)
	return ok && b
}

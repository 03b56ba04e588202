package classifier

import (
	"slices"
	"strconv"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Pruner removes the parts of reported state that a ContentClassifier says do not propagate. It
// is immutable once built and safe for concurrent use. The nil *Pruner prunes nothing.
type Pruner struct {
	root *node
}

// node is one level of the pointer tree: remove means the whole value here goes.
type node struct {
	remove   bool
	children map[string]*node
}

// NewPruner compiles the valid `dontPropagatePointers` under `status` of cc. It returns nil when
// there are none (including for a nil cc), which prunes nothing.
func NewPruner(cc *controlv1alpha1.ContentClassifier) *Pruner {
	ptrs := StatusPointers(cc)
	if len(ptrs) == 0 {
		return nil
	}
	root := &node{}
	for _, p := range ptrs {
		n := root
		for _, tok := range p {
			if n.remove {
				break
			}
			if n.children == nil {
				n.children = map[string]*node{}
			}
			c := n.children[tok]
			if c == nil {
				c = &node{}
				n.children[tok] = c
			}
			n = c
		}
		n.remove, n.children = true, nil
	}
	return &Pruner{root: root}
}

// StatusPointers returns the valid `dontPropagatePointers` of cc that point under `status`,
// relative to `status` (so ["status", "ready"] becomes ["ready"], and ["status"] becomes the
// empty pointer: all of the reported state). Invalid entries are left out.
func StatusPointers(cc *controlv1alpha1.ContentClassifier) []controlv1alpha1.JSONPointer {
	if cc == nil {
		return nil
	}
	var out []controlv1alpha1.JSONPointer
	for _, p := range cc.Spec.DontPropagatePointers {
		if len(p) == 0 || p[0] != StatusToken {
			continue
		}
		if slices.ContainsFunc(cc.Spec.DesiredStatePointers, func(q controlv1alpha1.JSONPointer) bool { return slices.Equal(p, q) }) {
			continue // invalid: in both lists
		}
		out = append(out, slices.Clone(p[1:]))
	}
	return out
}

// Prune returns status without the parts named by cc's valid `dontPropagatePointers` under
// `status`. It is NewPruner(cc).Prune(status); build a Pruner once when pruning many statuses.
func Prune(status any, cc *controlv1alpha1.ContentClassifier) any {
	return NewPruner(cc).Prune(status)
}

// Prune returns status (a decoded JSON value: map[string]any, []any, or a scalar) without the
// parts this Pruner removes. The input is not modified; unchanged parts are shared with it. When
// the whole of status is removed the result is nil (the WEC has reported nothing).
func (p *Pruner) Prune(status any) any {
	out, _ := p.PruneChanged(status)
	return out
}

// PruneChanged is Prune, and reports whether it removed anything (when not, the result is status
// itself).
func (p *Pruner) PruneChanged(status any) (any, bool) {
	if p == nil || status == nil {
		return status, false
	}
	if p.root.remove {
		return nil, true
	}
	return prune(status, p.root)
}

// prune applies the children of n to v and reports whether anything changed.
func prune(v any, n *node) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		var out map[string]any
		for tok, c := range n.children {
			child, ok := v[tok]
			if !ok {
				continue
			}
			var repl any
			drop := c.remove
			if !drop {
				var changed bool
				if repl, changed = prune(child, c); !changed {
					continue
				}
			}
			if out == nil {
				out = make(map[string]any, len(v))
				for k, x := range v {
					out[k] = x
				}
			}
			if drop {
				delete(out, tok)
			} else {
				out[tok] = repl
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any // built lazily, only when something changes
		changed := false
		for i, elem := range v {
			c := n.children[strconv.Itoa(i)]
			switch {
			case c == nil:
				if changed {
					out = append(out, elem)
				}
			case c.remove:
				if !changed {
					out, changed = append(make([]any, 0, len(v)), v[:i]...), true
				}
			default:
				repl, ch := prune(elem, c)
				if ch && !changed {
					out, changed = append(make([]any, 0, len(v)), v[:i]...), true
				}
				if changed {
					out = append(out, repl)
				}
			}
		}
		if !changed {
			return v, false
		}
		return out, true
	default:
		return v, false
	}
}

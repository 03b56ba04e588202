package resources

import (
	"slices"
	"strings"
)

// Scope is what the informers of a resource must cover (docs/security.md, "Reads"): every
// namespace (All), or only the namespaces named. A cluster-scoped resource is always watched
// cluster-wide.
type Scope struct {
	All        bool
	Namespaces []string // sorted, each once; ignored when All
}

// AllNamespaces is the scope of a cluster-wide informer.
func AllNamespaces() Scope { return Scope{All: true} }

// InNamespaces is the scope of the namespaces named ("" is ignored).
func InNamespaces(namespaces ...string) Scope {
	out := make([]string, 0, len(namespaces))
	for _, ns := range namespaces {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return Scope{Namespaces: slices.Compact(out)}
}

// Union is the scope that covers s and o.
func (s Scope) Union(o Scope) Scope {
	if s.All || o.All {
		return AllNamespaces()
	}
	return InNamespaces(append(slices.Clone(s.Namespaces), o.Namespaces...)...)
}

// Covers reports whether s covers the namespace ns.
func (s Scope) Covers(ns string) bool {
	return s.All || slices.Contains(s.Namespaces, ns)
}

// Empty reports whether s covers nothing.
func (s Scope) Empty() bool { return !s.All && len(s.Namespaces) == 0 }

// String is "*" for every namespace, else the namespaces joined by commas.
func (s Scope) String() string {
	if s.All {
		return "*"
	}
	return strings.Join(s.Namespaces, ",")
}

// Want is a resource and the scope its informers must cover.
type Want struct {
	Info  ResourceInfo
	Scope Scope
}

package luahealth

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	argocustomizations "github.com/argoproj/argo-cd/v3/resource_customizations"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
)

// ArgoCDVersion is the version of the argo-cd module whose scripts are built in (go.mod requires it;
// TestArgoCDVersion keeps the two in step).
const ArgoCDVersion = "v3.5.7"

// ArgoCDFS is Argo CD's resource_customizations tree: <group>/<Kind>/health.lua with its
// health_test.yaml and testdata/.
func ArgoCDFS() fs.FS { return argocustomizations.Embedded }

// Checks finds the health script of a kind as Argo CD does: a user script for the exact key, a user
// wildcard, Argo CD's script for the exact key, Argo CD's wildcard scripts. It is immutable and safe
// for concurrent use.
type Checks struct {
	user, builtin layer
}

type layer struct {
	exact map[string]*Script
	wild  []*Script // patterns, in Argo CD's order
}

func (ly *layer) find(key string) *Script {
	if s := ly.exact[key]; s != nil {
		return s
	}
	for _, s := range ly.wild {
		if ok, _ := path.Match(s.Key, key); ok {
			return s
		}
	}
	return nil
}

// Key is Argo CD's key of a kind: "group/Kind", or "Kind" for the core group.
func Key(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Group + "/" + gk.Kind
}

// For returns the script that judges kind gk, or nil.
func (c *Checks) For(gk schema.GroupKind) *Script {
	if c == nil {
		return nil
	}
	key := Key(gk)
	if s := c.user.find(key); s != nil {
		return s
	}
	return c.builtin.find(key)
}

// Health judges obj of kind gk; ok is false when no script judges gk.
func (c *Checks) Health(gk schema.GroupKind, obj map[string]any) (r health.Result, ok bool, err error) {
	s := c.For(gk)
	if s == nil {
		return health.Result{}, false, nil
	}
	r, err = s.Run(obj)
	return r, true, err
}

var builtinOnce = sync.OnceValues(func() (layer, error) { return compileArgoCD(DefaultLimits()) })

// Builtin returns Argo CD's scripts, compiled once per process with DefaultLimits.
func Builtin() (*Checks, error) {
	ly, err := builtinOnce()
	if err != nil {
		return nil, err
	}
	return &Checks{builtin: ly}, nil
}

// compileArgoCD compiles every health.lua of Argo CD's tree. Directories named "_" stand for any
// group or kind, as in Argo CD (wildcards are tried in path order).
func compileArgoCD(lim Limits) (layer, error) {
	ly := layer{exact: map[string]*Script{}}
	files, err := fs.Glob(ArgoCDFS(), "*/*/health.lua")
	if err != nil {
		return ly, err
	}
	sort.Strings(files)
	for _, f := range files {
		src, err := fs.ReadFile(ArgoCDFS(), f)
		if err != nil {
			return ly, err
		}
		key := path.Dir(f)
		wild := strings.Contains(key, "_")
		if wild {
			key = strings.ReplaceAll(key, "_", "*")
		}
		s, err := compile(key, SourceArgoCD, string(src), true, lim)
		if err != nil {
			return ly, fmt.Errorf("argo-cd %s: %w", f, err)
		}
		if wild {
			ly.wild = append(ly.wild, s)
		} else {
			ly.exact[key] = s
		}
	}
	return ly, nil
}

// Problem is a ConfigMap entry that was not taken: its key and why.
type Problem struct {
	Key string // the ConfigMap data key
	Err error
}

func (p Problem) Error() string {
	return fmt.Sprintf("data[%s]: %s", p.Key, strings.Join(strings.Fields(p.Err.Error()), " "))
}

// Prefixes of the argocd-cm keys read by WithConfigMap.
const (
	healthPrefix   = "resource.customizations.health."
	openLibsPrefix = "resource.customizations.useOpenLibs."
)

// WithConfigMap returns c with the health scripts of an argocd-cm-format ConfigMap's data added in
// front: `resource.customizations.health.<group>_<kind>` (or `.<kind>` for the core group; `*` in
// either part is a wildcard; `all` is every kind) holds a script, and
// `resource.customizations.useOpenLibs.<group>_<kind>: "true"` opens the string and math libraries
// for it. Other keys are ignored. An entry that does not compile is a Problem, and Argo CD's own
// script (if any) stays in force for its kinds.
func (c *Checks) WithConfigMap(data map[string]string, lim Limits) (*Checks, []Problem) {
	out := &Checks{builtin: c.builtin, user: layer{exact: map[string]*Script{}}}
	var problems []Problem
	keys := make([]string, 0, len(data))
	for k := range data {
		if strings.HasPrefix(k, healthPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		gk := strings.TrimPrefix(k, healthPrefix)
		key, err := overrideKey(gk)
		if err != nil {
			problems = append(problems, Problem{k, err})
			continue
		}
		openLibs := false
		if v, ok := data[openLibsPrefix+gk]; ok {
			if openLibs, err = strconv.ParseBool(v); err != nil {
				problems = append(problems, Problem{openLibsPrefix + gk, fmt.Errorf("not a boolean: %q", v)})
				continue
			}
		}
		s, err := compile(key, SourceConfigMap, data[k], openLibs, lim)
		if err != nil {
			problems = append(problems, Problem{k, err})
			continue
		}
		if strings.Contains(key, "*") {
			out.user.wild = append(out.user.wild, s)
		} else {
			out.user.exact[key] = s
		}
	}
	return out, problems
}

// overrideKey converts argocd-cm's <group>_<kind> to Argo CD's key, as Argo CD does.
func overrideKey(gk string) (string, error) {
	if gk == "all" {
		return "*/*", nil
	}
	parts := strings.Split(gk, "_")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0] + "/" + parts[1], nil
	case len(parts) == 1 && gk != "":
		return gk, nil
	}
	return "", fmt.Errorf("the key must end in <group>_<kind> or <kind>, not %q", gk)
}

// GroupKindOf is the group and kind of an object, from its apiVersion and kind.
func GroupKindOf(obj map[string]any) schema.GroupKind {
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return schema.FromAPIVersionAndKind(av, k).GroupKind()
}

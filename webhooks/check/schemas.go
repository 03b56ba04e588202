package check

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// DiscoverySchemas resolves kinds' OpenAPI schemas from the apiserver's /openapi/v3 discovery.
// It keeps each group version's document, and the schemas resolved from it, until the apiserver
// publishes a new one (the hash in the document's URL changes), looking at the list of documents
// at most once per Recheck. So a schema — and the typed CEL environment built from it — is reused
// while unchanged, and a CRD installed or changed a moment ago is seen after at most Recheck. It
// is safe for concurrent use.
//
// client-go's cached OpenAPI client (k8s.io/client-go/openapi/cached) does not fit here: it
// reads the list of documents once for its lifetime (a CRD installed later is never seen), keeps
// the first error for good (one failed request would disable typed checks until a restart),
// and caches raw bytes, where this keeps the parsed, reference-resolved schemas per document
// hash.
type DiscoverySchemas struct {
	client  openapi.Client
	recheck time.Duration
	now     func() time.Time

	mu      sync.Mutex
	paths   map[string]openapi.GroupVersion
	checked time.Time
	docs    map[string]*discoveredDoc // by discovery path, e.g. "apis/apps/v1"
}

type discoveredDoc struct {
	url     string
	schemas *OfflineSchemas
}

var _ resolver.SchemaResolver = (*DiscoverySchemas)(nil)

// NewDiscoverySchemas reads OpenAPI v3 documents through client (e.g.
// discovery.DiscoveryInterface.OpenAPIV3()), looking for new versions at most once per recheck.
func NewDiscoverySchemas(client openapi.Client, recheck time.Duration) *DiscoverySchemas {
	return &DiscoverySchemas{client: client, recheck: recheck, now: time.Now, docs: map[string]*discoveredDoc{}}
}

// Refresh makes the next ResolveSchema look at the published documents again (and so re-read a
// document whose hash changed) instead of waiting for the recheck interval: for a caller whose
// write was just rejected by a schema newer than the one it resolved.
func (d *DiscoverySchemas) Refresh() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paths = nil
}

// ResolveSchema returns the schema of gvk with its references populated.
func (d *DiscoverySchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paths == nil || d.now().Sub(d.checked) >= d.recheck {
		paths, err := d.client.Paths()
		if err != nil {
			return nil, err
		}
		d.paths, d.checked = paths, d.now()
	}
	path := "apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		path = "api/" + gvk.Version
	}
	gv, ok := d.paths[path]
	if !ok {
		d.paths = nil // look again next time: the group version may be new
		return nil, fmt.Errorf("no OpenAPI document for %s: %w", gvk.GroupVersion(), resolver.ErrSchemaNotFound)
	}
	doc := d.docs[path]
	if doc == nil || doc.url != gv.ServerRelativeURL() {
		js, err := gv.Schema(runtime.ContentTypeJSON)
		if err != nil {
			return nil, err
		}
		o := newOfflineSchemas()
		if err := o.addOpenAPI(js); err != nil {
			return nil, fmt.Errorf("OpenAPI document of %s: %w", gvk.GroupVersion(), err)
		}
		doc = &discoveredDoc{url: gv.ServerRelativeURL(), schemas: o}
		d.docs[path] = doc
	}
	return doc.schemas.ResolveSchema(gvk)
}

// OfflineSchemas holds OpenAPI v3 documents and CRDs read from files, for `statusfold validate
// --schemas DIR`: it resolves schemas (SchemaResolver) and maps resources to kinds
// (ResourceMapper) like the apiserver that served them.
type OfflineSchemas struct {
	mapper     *meta.DefaultRESTMapper
	components map[string]*spec.Schema
	roots      map[schema.GroupVersionKind]string // kind -> component name

	mu       sync.Mutex
	resolved map[schema.GroupVersionKind]*spec.Schema
}

var (
	_ resolver.SchemaResolver = (*OfflineSchemas)(nil)
	_ ResourceMapper          = (*OfflineSchemas)(nil)
)

// LoadSchemas reads every .json, .yaml and .yml file in dir (not recursing): OpenAPI v3
// documents as the apiserver serves them at /openapi/v3/api/v1 and /openapi/v3/apis/GROUP/VERSION
// (`kubectl get --raw /openapi/v3/apis/apps/v1 > apps-v1.json`), and CustomResourceDefinition
// manifests.
func LoadSchemas(dir string) (*OfflineSchemas, error) {
	o := newOfflineSchemas()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := o.add(data); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	return o, nil
}

func newOfflineSchemas() *OfflineSchemas {
	return &OfflineSchemas{
		mapper:     meta.NewDefaultRESTMapper(nil),
		components: map[string]*spec.Schema{},
		roots:      map[schema.GroupVersionKind]string{},
		resolved:   map[schema.GroupVersionKind]*spec.Schema{},
	}
}

func (o *OfflineSchemas) add(data []byte) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	var probe struct {
		OpenAPI string `json:"openapi"`
		Kind    string `json:"kind"`
	}
	if err := json.Unmarshal(js, &probe); err != nil {
		return err
	}
	switch {
	case probe.OpenAPI != "":
		return o.addOpenAPI(js)
	case probe.Kind == "CustomResourceDefinition":
		return o.addCRD(js)
	}
	return fmt.Errorf("neither an OpenAPI v3 document nor a CustomResourceDefinition")
}

type gvkExtension struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (o *OfflineSchemas) addOpenAPI(js []byte) error {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		return err
	}
	for name, s := range doc.Components.Schemas {
		o.components[name] = s
		var gvks []gvkExtension
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			continue
		}
		for _, g := range gvks {
			o.roots[schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}] = name
		}
	}
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		resource, namespaced, ok := resourceOfPath(p)
		if !ok {
			continue
		}
		for _, raw := range doc.Paths[p] {
			var op struct {
				GVK *gvkExtension `json:"x-kubernetes-group-version-kind"`
			}
			if json.Unmarshal(raw, &op) != nil || op.GVK == nil {
				continue
			}
			scope := meta.RESTScopeRoot
			if namespaced {
				scope = meta.RESTScopeNamespace
			}
			gvk := schema.GroupVersionKind{Group: op.GVK.Group, Version: op.GVK.Version, Kind: op.GVK.Kind}
			o.mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(resource),
				gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind)), scope)
			break
		}
	}
	return nil
}

// resourceOfPath returns the resource of a collection or object path such as
// /apis/apps/v1/namespaces/{namespace}/deployments/{name}; it rejects subresources and watches.
func resourceOfPath(p string) (resource string, namespaced, ok bool) {
	var rest []string
	switch segs := strings.Split(strings.Trim(p, "/"), "/"); {
	case len(segs) >= 3 && segs[0] == "api":
		rest = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		rest = segs[3:]
	default:
		return "", false, false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[1] == "{namespace}" {
		rest, namespaced = rest[2:], true
	}
	if len(rest) == 0 || len(rest) > 2 || rest[0] == "watch" || strings.HasPrefix(rest[0], "{") {
		return "", false, false
	}
	return rest[0], namespaced, true
}

func (o *OfflineSchemas) addCRD(js []byte) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(js, &crd); err != nil {
		return err
	}
	scope := meta.RESTScopeRoot
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		scope = meta.RESTScopeNamespace
	}
	for _, v := range crd.Spec.Versions {
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		singular := crd.Spec.Names.Singular
		if singular == "" {
			singular = strings.ToLower(crd.Spec.Names.Kind)
		}
		o.mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(crd.Spec.Names.Plural), gvk.GroupVersion().WithResource(singular), scope)
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			return err
		}
		s := &spec.Schema{}
		if err := json.Unmarshal(b, s); err != nil {
			return err
		}
		name := "crd:" + gvk.String()
		o.components[name] = s
		o.roots[gvk] = name
	}
	return nil
}

// ResolveSchema returns the schema of gvk with its references populated.
func (o *OfflineSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.resolved[gvk]; ok {
		return s, nil
	}
	root, ok := o.roots[gvk]
	if !ok {
		return nil, fmt.Errorf("no schema for %s: %w", gvk, resolver.ErrSchemaNotFound)
	}
	s, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok := o.components[strings.TrimPrefix(ref, "#/components/schemas/")]
		return s, ok
	}, root)
	if err != nil {
		return nil, err
	}
	o.resolved[gvk] = s
	return s, nil
}

// KindFor implements ResourceMapper.
func (o *OfflineSchemas) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return o.mapper.KindFor(resource)
}

// ResourcesFor implements ResourceMapper.
func (o *OfflineSchemas) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return o.mapper.ResourcesFor(input)
}

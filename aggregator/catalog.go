package aggregator

import (
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// resourceInfo is what the reconciler needs to know about one resource, from discovery.
type resourceInfo struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// HasStatus: the resource has a status subresource (status is written there).
	HasStatus bool
}

// GVK of the resource.
func (r resourceInfo) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// catalog is the discovery view of the WDS: every listable, watchable resource in its preferred
// version, minus those never selected (SPEC §1: our own kinds, events and leases).
type catalog struct {
	disc    discovery.DiscoveryInterface
	refresh time.Duration

	mu      sync.Mutex
	at      time.Time
	byGR    map[schema.GroupResource]resourceInfo
	ordered []resourceInfo
}

// minRefresh bounds how often a miss can force a discovery refresh.
const minRefresh = 2 * time.Second

func newCatalog(disc discovery.DiscoveryInterface, refresh time.Duration) *catalog {
	return &catalog{disc: disc, refresh: refresh}
}

// excludedGroups are never selected by `"*"` or by anything else.
var excludedGroups = map[string]bool{
	controlv1alpha1.GroupVersion.Group: true,
	"coordination.k8s.io":              true, // leases
	"events.k8s.io":                    true,
}

func excluded(gr schema.GroupResource) bool {
	return excludedGroups[gr.Group] || (gr.Group == "" && gr.Resource == "events") ||
		gr.Group == "statusfold.dev" || strings.HasSuffix(gr.Group, ".statusfold.dev")
}

// resources returns the catalog, re-reading discovery when it is older than the refresh period
// or when force is set. Discovery errors for some groups (e.g. an aggregated API that is down)
// keep the resources that were found.
func (c *catalog) resources(force bool) []resourceInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if age := time.Since(c.at); c.byGR != nil && ((!force && age < c.refresh) || age < minRefresh) {
		return c.ordered
	}
	lists, err := discovery.ServerPreferredResources(c.disc)
	if err != nil && len(lists) == 0 && c.byGR != nil {
		return c.ordered
	}
	// Status subresources are listed in every version; preferred lists may omit them, so look
	// them up across all versions.
	withStatus := map[schema.GroupResource]bool{}
	if _, all, err2 := c.disc.ServerGroupsAndResources(); err2 == nil || len(all) > 0 {
		for _, l := range all {
			gv, _ := schema.ParseGroupVersion(l.GroupVersion)
			for _, r := range l.APIResources {
				if base, sub, ok := strings.Cut(r.Name, "/"); ok && sub == "status" {
					withStatus[schema.GroupResource{Group: gv.Group, Resource: base}] = true
				}
			}
		}
	}
	byGR := map[schema.GroupResource]resourceInfo{}
	var ordered []resourceInfo
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r, "list", "watch") {
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			if excluded(gr) {
				continue
			}
			info := resourceInfo{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, HasStatus: withStatus[gr]}
			byGR[gr] = info
			ordered = append(ordered, info)
		}
	}
	slices.SortFunc(ordered, func(a, b resourceInfo) int { return strings.Compare(a.GVR.String(), b.GVR.String()) })
	c.byGR, c.ordered, c.at = byGR, ordered, time.Now()
	return ordered
}

// lookup finds a resource by group and resource, refreshing discovery once if it is unknown
// (e.g. a CRD created since the last refresh).
func (c *catalog) lookup(gr schema.GroupResource) (resourceInfo, bool) {
	c.resources(false)
	c.mu.Lock()
	info, ok := c.byGR[gr]
	c.mu.Unlock()
	if ok {
		return info, true
	}
	c.resources(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok = c.byGR[gr]
	return info, ok
}

func hasVerbs(r metav1.APIResource, verbs ...string) bool {
	for _, v := range verbs {
		if !slices.Contains(r.Verbs, v) {
			return false
		}
	}
	return true
}

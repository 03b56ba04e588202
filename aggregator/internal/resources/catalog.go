package resources

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// ResourceInfo is what the reconciler needs to know about one resource, from discovery.
type ResourceInfo struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// HasStatus: the resource has a status subresource (status is written there).
	HasStatus bool
}

// GVK of the resource.
func (r ResourceInfo) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// Catalog is the discovery view of the WDS: every listable, watchable resource in its preferred
// version, minus those never selected (our own kinds, events and leases: docs/controller.md).
//
// Nothing is forgotten on uncertainty (docs/controller.md, "Failures"): when discovery fails for
// some groups (e.g. an aggregated API whose server is down), their resources stay as they were
// last seen, and a resource that is unknown while its group's discovery fails is reported as
// uncertain, not as gone. Discovery round trips run outside the mutex: readers get the previous
// catalog while a refresh runs, so a slow discovery stalls no worker.
type Catalog struct {
	disc    discovery.DiscoveryInterface
	refresh time.Duration

	mu      sync.Mutex
	at      time.Time
	byGR    map[schema.GroupResource]ResourceInfo
	ordered []ResourceInfo
	// failed are the groups whose discovery failed at the last refresh; allFailed: the whole
	// discovery failed and nothing was known before.
	failed    map[string]bool
	allFailed bool
	// refreshing is closed when the refresh in progress ends (nil: none runs).
	refreshing chan struct{}
	// OnRecovered, if set, is called (outside the mutex) with each group whose discovery failed
	// at the previous refresh and succeeds at this one.
	OnRecovered func(group string)
}

// minRefresh bounds how often a miss can force a discovery refresh.
const minRefresh = 2 * time.Second

func NewCatalog(disc discovery.DiscoveryInterface, refresh time.Duration) *Catalog {
	return &Catalog{disc: disc, refresh: refresh}
}

// excludedGroups and excludedResources are never selected by `"*"` or by anything else, and
// never watched: those of KubeStellar v0.30.0's binding controller (what the API server and its
// controllers make in each cluster, and KubeStellar's own objects), and statusfold's own groups.
var excludedGroups = map[string]bool{
	controlv1alpha1.GroupVersion.Group: true,
	"coordination.k8s.io":              true, // leases
	"events.k8s.io":                    true,
	"flowcontrol.apiserver.k8s.io":     true,
	"discovery.k8s.io":                 true, // endpointslices
	"apiregistration.k8s.io":           true, // apiservices
}

var excludedResources = map[schema.GroupResource]bool{
	{Resource: "events"}:    true,
	{Resource: "nodes"}:     true,
	{Resource: "endpoints"}: true,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}: true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:             true,
}

func excluded(gr schema.GroupResource) bool {
	return excludedGroups[gr.Group] || excludedResources[gr] ||
		gr.Group == "statusfold.dev" || strings.HasSuffix(gr.Group, ".statusfold.dev")
}

// Resources returns the catalog, re-reading discovery when it is older than the refresh period
// or when force is set (at most once per minRefresh). While another goroutine refreshes, it
// returns the previous catalog at once, unless force is set or there is none: then it waits for
// that refresh.
func (c *Catalog) Resources(force bool) []ResourceInfo {
	c.mu.Lock()
	if age := time.Since(c.at); c.byGR != nil && ((!force && age < c.refresh) || age < minRefresh) {
		defer c.mu.Unlock()
		return c.ordered
	}
	if ch := c.refreshing; ch != nil {
		if !force && c.byGR != nil {
			defer c.mu.Unlock()
			return c.ordered
		}
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.ordered
	}
	ch := make(chan struct{})
	c.refreshing = ch
	prev := c.byGR
	c.mu.Unlock()

	byGR, failed, complete := discover(c.disc, prev)

	c.mu.Lock()
	var back []string
	if !complete {
		// Nothing could be read: keep what was known.
		c.allFailed = c.byGR == nil
	} else {
		back = recoveredGroups(c.failed, failed)
		ordered := slices.Collect(maps.Values(byGR))
		slices.SortFunc(ordered, func(a, b ResourceInfo) int { return strings.Compare(a.GVR.String(), b.GVR.String()) })
		c.byGR, c.ordered, c.failed, c.allFailed = byGR, ordered, failed, false
	}
	c.at = time.Now()
	c.refreshing = nil
	close(ch)
	ordered, notify := c.ordered, c.OnRecovered
	c.mu.Unlock()
	if notify != nil {
		for _, g := range back {
			notify(g)
		}
	}
	return ordered
}

// recoveredGroups lists, sorted, the groups that failed before and do not now.
func recoveredGroups(before, now map[string]bool) []string {
	var out []string
	for g := range before {
		if !now[g] {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// Degraded reports whether discovery failed, for some groups or as a whole, at the last refresh.
func (c *Catalog) Degraded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allFailed || len(c.failed) > 0
}

// Uncertain returns, sorted, the groups whose discovery failed at the last refresh (none: nil),
// and all: discovery failed as a whole and nothing was known before. The resources of such a
// group that the catalog does not know may exist (binding resolution keeps their entries).
func (c *Catalog) Uncertain() (groups []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g := range c.failed {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups, c.allFailed
}

// discover reads discovery. The resources of groups whose discovery fails are taken from prev
// (the catalog as last known). complete is false when discovery failed as a whole.
func discover(disc discovery.DiscoveryInterface, prev map[schema.GroupResource]ResourceInfo) (byGR map[schema.GroupResource]ResourceInfo, failed map[string]bool, complete bool) {
	failed = map[string]bool{}
	lists, err := discovery.ServerPreferredResources(disc)
	if !partial(err, failed) {
		return nil, nil, false
	}
	// Status subresources are listed in every version; preferred lists may omit them, so look
	// them up across all versions.
	withStatus := map[schema.GroupResource]bool{}
	_, all, err := disc.ServerGroupsAndResources()
	if !partial(err, failed) {
		return nil, nil, false
	}
	for _, l := range all {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if base, sub, ok := strings.Cut(r.Name, "/"); ok && sub == "status" {
				withStatus[schema.GroupResource{Group: gv.Group, Resource: base}] = true
			}
		}
	}
	byGR = map[schema.GroupResource]ResourceInfo{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || failed[gv.Group] {
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
			byGR[gr] = ResourceInfo{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, HasStatus: withStatus[gr]}
		}
	}
	for gr, info := range prev {
		if failed[gr.Group] {
			byGR[gr] = info
		}
	}
	return byGR, failed, true
}

// partial reports whether a discovery call's result is usable: no error, or a failure of some
// groups only, which it adds to failed.
func partial(err error, failed map[string]bool) bool {
	if err == nil {
		return true
	}
	var gdf *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &gdf) {
		return false
	}
	for gv := range gdf.Groups {
		failed[gv.Group] = true
	}
	return true
}

// ErrUncertain: a resource is unknown while discovery of its group fails; it may exist.
var ErrUncertain = errors.New("discovery of its API group failed; not treated as gone")

// Lookup finds a resource by group and resource, refreshing discovery once if it is unknown
// (e.g. a CRD created since the last refresh). It returns errUncertain (wrapped) when the
// resource is unknown while the discovery of its group fails.
func (c *Catalog) Lookup(gr schema.GroupResource) (ResourceInfo, bool, error) {
	c.Resources(false)
	if info, ok := c.Known(gr); ok {
		return info, true, nil
	}
	c.Resources(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if info, ok := c.byGR[gr]; ok {
		return info, true, nil
	}
	if c.allFailed || c.failed[gr.Group] {
		return ResourceInfo{}, false, fmt.Errorf("resource %s: %w", gr, ErrUncertain)
	}
	return ResourceInfo{}, false, nil
}

// Known returns a resource as the catalog knows it now, without reading discovery.
func (c *Catalog) Known(gr schema.GroupResource) (ResourceInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.byGR[gr]
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

// RefreshWhileDegraded re-reads discovery every period (aggregator.Options.CatalogRefresh) while
// the discovery of some group fails, so that the group's return is seen even when no evaluation
// reads the catalog. It returns when ctx ends.
func (c *Catalog) RefreshWhileDegraded(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if c.Degraded() {
				c.Resources(false)
			}
		}
	}
}

package inputs

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// DestsCache holds each Binding's destinations as a sorted set, per Binding resourceVersion. The
// slices it returns are shared and never modified.
type DestsCache struct {
	mu sync.Mutex
	m  map[types.UID]destsEntry
}

type destsEntry struct {
	rv    string
	dests []string
}

func NewDestsCache() *DestsCache { return &DestsCache{m: map[types.UID]destsEntry{}} }

func (c *DestsCache) Of(b *controlv1alpha1.Binding) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[b.UID]; ok && e.rv == b.ResourceVersion {
		return e.dests
	}
	d := rules.Destinations(&b.Spec)
	c.m[b.UID] = destsEntry{rv: b.ResourceVersion, dests: d}
	return d
}

func (c *DestsCache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}

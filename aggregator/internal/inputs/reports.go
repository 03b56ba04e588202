package inputs

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// ReportCache holds each WorkStatus's decoded, pruned report, keyed by UID and valid for one
// (resourceVersion, ContentClassifier resourceVersion). The decoded values are shared with the
// Tables and States they are fed to, and never mutated. Entries go when the WorkStatus leaves the
// cache (the WorkStatus event handler, fanout).
type ReportCache struct {
	mu sync.Mutex
	m  map[types.UID]reportEntry
}

type reportEntry struct {
	rv, prunerRV string
	r            Report
}

func NewReportCache() *ReportCache { return &ReportCache{m: map[types.UID]reportEntry{}} }

// get returns ws's cached report; a nil ws (no WorkStatus) is never cached.
func (c *ReportCache) get(ws *controlv1alpha1.WorkStatus, prunerRV string) (Report, bool) {
	if ws == nil {
		return Report{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[ws.UID]
	if !ok || e.rv != ws.ResourceVersion || e.prunerRV != prunerRV {
		return Report{}, false
	}
	return e.r, true
}

func (c *ReportCache) put(ws *controlv1alpha1.WorkStatus, prunerRV string, r Report) {
	if ws == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[ws.UID] = reportEntry{rv: ws.ResourceVersion, prunerRV: prunerRV, r: r}
}

func (c *ReportCache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, uid)
}

func (c *ReportCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

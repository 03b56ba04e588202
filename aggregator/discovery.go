package aggregator

import (
	"context"
	"time"
)

// refreshWhileDegraded re-reads discovery every CatalogRefresh while the discovery of some group
// fails, so that the group's return is seen even when no evaluation reads the catalog.
func (a *Aggregator) refreshWhileDegraded(ctx context.Context) {
	t := time.NewTicker(a.opts.CatalogRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if a.catalog.Degraded() {
				a.catalog.Resources(false)
			}
		}
	}
}

// groupRecovered re-evaluates, at once, the bound objects of a group whose discovery works
// again, and re-resolves the policies: their work failed while the group was down and waits in
// exponential backoff, which by then can be longer than the outage was.
func (a *Aggregator) groupRecovered(group string) {
	a.log.Info("API group discovery works again; re-evaluating its objects", "group", group)
	ctx := context.Background()
	a.enqueueBoundOf(ctx, group, false)
	a.enqueueAllPolicies(ctx)
}

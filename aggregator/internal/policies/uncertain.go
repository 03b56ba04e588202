package policies

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// keepUncertain adds to unlisted the resources whose entries in cur (the Binding as written, nil:
// none) must be kept because their API group's discovery fails and the catalog does not know
// them (rules.UncertainResources): at start, or after a leader change, the catalog has no earlier
// view of a group that is down, so its objects would look absent and their entries would be
// dropped — and KubeStellar's transport would withdraw them from the WECs. Each kept group is
// reported on the policy (log and Warning Event "DiscoveryFailed", statusfold_errors_total
// {where="discovery"}). When discovery failed as a whole with nothing known before, nothing can
// be resolved: an error, retried, and the Binding is left as it is. When the group answers
// again, the catalog re-queues every policy (Catalog.OnRecovered) and resolution proceeds.
func (r *Reconciler) keepUncertain(bp *controlv1alpha1.BindingPolicy, cur *controlv1alpha1.Binding, unlisted map[schema.GroupResource]bool) error {
	groups, all := r.catalog.Uncertain()
	if all {
		return fmt.Errorf("resolving BindingPolicy %s: discovery: %w", bp.Name, resources.ErrUncertain)
	}
	if cur == nil || len(groups) == 0 {
		return nil
	}
	keep := rules.UncertainResources(bp, &cur.Spec, groups, func(gr schema.GroupResource) bool {
		_, ok := r.catalog.Known(gr)
		return ok
	})
	byGroup := map[string][]string{}
	for gr := range keep {
		unlisted[gr] = true
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		res := byGroup[g]
		slices.Sort(res)
		r.metrics.Errors.WithLabelValues("discovery").Inc()
		r.report.Failure(bp.Name, "DiscoveryFailed", "discovery of API group %q failed; the Binding keeps its entries for %s as they were",
			g, strings.Join(res, ", "))
	}
	return nil
}

// listedVersions are the resourceVersions Binding b (nil: none) lists, by object.
func listedVersions(b *controlv1alpha1.Binding) map[rules.ObjectKey]string {
	if b == nil {
		return nil
	}
	bound := rules.BoundObjects(&b.Spec)
	m := make(map[rules.ObjectKey]string, len(bound))
	for _, bo := range bound {
		m[bo.Key()] = bo.ResourceVersion
	}
	return m
}

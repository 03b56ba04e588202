package statusreturn

import (
	"context"

	"k8s.io/utils/lru"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	"github.com/statusfold/statusfold/policy/sizebudget"
)

// maxShrinks bounds the smaller writes made at once after the apiserver refused one as too large.
const maxShrinks = 4

// writeWithin writes the return (labels and status) within the object size budget
// (docs/rules.md "Size budget"): the status is trimmed by sizebudget.Status — measured with the
// rest of the object as cached — then pruned to the kind's schema. When the apiserver refuses
// the write as too large all the same, it is made smaller at once under a lowered budget instead
// of being retried as it is.
func (r *Returner) writeWithin(ctx context.Context, in *inputs.Object, labels map[string]string, status map[string]any) (bool, error) {
	bkey := "status\x00" + in.Key.String()
	gk := schema.GroupKind{Group: in.Info.GVR.Group, Kind: in.Info.Kind}
	for attempt := 0; ; attempt++ {
		fitted, tr := status, sizebudget.StatusTrim{Outcome: sizebudget.StatusWhole}
		if status != nil {
			fitted, tr = sizebudget.StatusOf(gk, objectWith(in, status), r.restSizes.of(in), r.budgets.For(bkey))
		}
		if tr.Outcome == sizebudget.StatusNone {
			r.metrics.Trimmed.WithLabelValues("status").Inc()
			r.report.Failure(in.Key, "OverSizeBudget", "status not returned: %s", tr)
			return false, nil // the status stays as it is until the content changes
		}
		pruned, dropped := r.pruneToSchema(in, fitted)
		wrote, err := r.writeReturn(ctx, in, labels, pruned, dropped)
		if err == nil {
			r.budgets.Settle(bkey, tr.Size, status == nil)
			if wrote && tr.Outcome != sizebudget.StatusWhole {
				r.metrics.Trimmed.WithLabelValues("status").Inc()
				r.report.Failure(in.Key, "OverSizeBudget", "status trimmed: %s", tr)
			}
			return wrote, nil
		}
		if !writer.IsTooLarge(err) || attempt == maxShrinks || status == nil {
			return wrote, err
		}
		b, lower := r.budgets.Shrink(bkey, sizebudget.EncodedSize(objectWith(in, fitted)))
		if !lower {
			return wrote, err
		}
		r.report.Failure(in.Key, "ObjectTooLarge", "status write refused as too large (%v): written again at once within %d bytes", err, b)
	}
}

// objectWith is the object of in as it would be stored with status as its status: a shallow
// copy, without managed fields (they are the budget's room, docs/rules.md "Size budget").
func objectWith(in *inputs.Object, status map[string]any) map[string]any {
	out := make(map[string]any, len(in.Obj.Object))
	for k, v := range in.Obj.Object {
		out[k] = v
	}
	if meta, ok := in.Obj.Object["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			if k != "managedFields" {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	out["status"] = status
	return out
}

// restSizes remembers, per workload object, the encoded size of the object without its status
// and managed fields at one resourceVersion, so that an evaluation that does not write (the
// object unchanged since) does not encode the whole object again to measure it.
type restSizes struct {
	c *lru.Cache // rules.ObjectKey → restSize; safe for concurrent use
}

type restSize struct {
	rv   string
	size int
}

func newRestSizes() *restSizes { return &restSizes{c: lru.New(8192)} }

// of is the size of in's object without status and managed fields.
func (s *restSizes) of(in *inputs.Object) int {
	rv := in.Obj.GetResourceVersion()
	v, ok := s.c.Get(in.Key)
	if rs, _ := v.(restSize); ok && rs.rv == rv && rv != "" {
		return rs.size
	}
	obj := objectWith(in, nil)
	delete(obj, "status")
	n := sizebudget.EncodedSize(obj)
	s.c.Add(in.Key, restSize{rv: rv, size: n})
	return n
}

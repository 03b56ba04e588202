package combined

import (
	"context"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/sizebudget"
)

// maxShrinks bounds the smaller writes made at once after the apiserver refused one as too large.
const maxShrinks = 4

// writeWithin writes cs, a CombinedStatus of object key, within its object size budget
// (docs/rules.md "Size budget"): trimmed by sizebudget.Results, and, when the apiserver refuses
// the write as too large all the same (its limits are lower than the budget assumes), made
// smaller at once under a lowered budget instead of being retried as it is.
func (w *Writer) writeWithin(ctx context.Context, key rules.ObjectKey, cs *controlv1alpha1.CombinedStatus) (bool, error) {
	bkey := "combinedstatus\x00" + cs.Namespace + "/" + cs.Name
	for attempt := 0; ; attempt++ {
		fitted, tr := sizebudget.Results(cs, w.budgets.For(bkey))
		written, err := w.write(ctx, key, fitted)
		if err == nil {
			w.budgets.Settle(bkey, tr.Size, false)
			if written && tr.Trimmed() {
				w.metrics.Trimmed.WithLabelValues("combinedstatus").Inc()
				w.reportf(key, "OverSizeBudget", "CombinedStatus %s/%s trimmed: %s", cs.Namespace, cs.Name, tr)
			}
			return written, nil
		}
		if !writer.IsTooLarge(err) || attempt == maxShrinks {
			return written, err
		}
		b, lower := w.budgets.Shrink(bkey, sizebudget.EncodedSize(fitted))
		if !lower {
			return written, err
		}
		w.reportf(key, "ObjectTooLarge", "CombinedStatus %s/%s refused as too large (%v): written again at once within %d bytes",
			cs.Namespace, cs.Name, err, b)
	}
}

// reportf reports a trim or a too-large refusal about object key: a log line and a Warning Event
// on the object, rate-limited (report.Reporter).
func (w *Writer) reportf(key rules.ObjectKey, reason, format string, args ...any) {
	if w.report != nil {
		w.report.Failure(key, reason, format, args...)
	}
}

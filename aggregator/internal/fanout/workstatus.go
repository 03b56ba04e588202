package fanout

import (
	"fmt"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"

	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// oversize reports a WorkStatus whose reported status is over the size cap, or holds a key too
// long to write back: a metric, and a log line and a Warning Event on its workload object
// (rate-limited per object).
func (h *Handlers) oversize(ws *controlv1alpha1.WorkStatus) {
	e := itscache.Oversize(ws)
	if e == nil {
		return
	}
	if h.metrics != nil {
		h.metrics.OversizeReports.Inc()
	}
	const then = ": it is not evaluated; its rows in the CombinedStatuses say so and the status return counts its state as unknown"
	reason, format, args := "ReportedStatusTooLarge",
		"WEC %s reported a status of %d bytes, over the cap of %d bytes (--max-reported-status-bytes)"+then,
		[]any{ws.Namespace, e.Size, e.Max}
	if e.KeyRunes > 0 {
		reason, format, args = "ReportedStatusKeyTooLong",
			"WEC %s reported a status with a key of %d characters, over the %d a server-side apply accepts"+then,
			[]any{ws.Namespace, e.KeyRunes, itscache.MaxApplyKeyRunes}
	}
	if h.report == nil {
		h.log.Info("reported status not evaluated", "workStatus", ws.Namespace+"/"+ws.Name, "reason", reason, "detail", fmt.Sprintf(format, args...))
		return
	}
	h.report.Failure(rules.WorkStatusObject(ws), reason, format, args...)
}

// flowQueue is a Queue that takes the flow of a key it is given: with fair queuing across WECs,
// a key queued by a WorkStatus event waits in its WEC's turn (pacing.FairQueue).
type flowQueue[K comparable] interface {
	AddFrom(key K, flow string)
}

// addFromWEC queues an object for a WorkStatus event of wec.
func (h *Handlers) addFromWEC(k rules.ObjectKey, wec string) {
	if q, ok := h.objects.(flowQueue[rules.ObjectKey]); ok {
		q.AddFrom(k, wec)
		return
	}
	h.objects.Add(k)
}

package statusreturn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/tools/events"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/writer"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// Writing workload objects (the executing-count label; .status, on the status subresource or the
// main resource) is granted by the aggregated ClusterRole in config/rbac/status_writer_role.yaml,
// not by a marker: it lists the built-in kinds and operators add their own kinds by label, so
// there is no wildcard write.

// aggregationStates is the aggregation engine as the status returner uses it
// (aggregation.Engine): one incremental State per object.
type aggregationStates interface {
	NewState(gk schema.GroupKind) *aggregation.State
}

var _ aggregationStates = (*aggregation.Engine)(nil)

// Returner decides, from the inputs that the inputs.Gatherer read, what statusfold returns into a
// workload object's own status (docs/rules.md "Status return": a copy, an aggregate or nothing)
// and writes it, with the return labels, pruned to the WDS's schema of the kind.
type Returner struct {
	// elsewhere reports whether the object is returned under another resource
	// (inputs.Gatherer.ReturnedElsewhere): asked only before a return is removed.
	elsewhere func(context.Context, *inputs.Object) (bool, error)
	engine    aggregationStates
	states    *returnStates
	memo      *returnMemo
	dests     *inputs.DestsCache
	writer    *writer.Writer
	report    *report.Reporter
	ownWrites *echo.OwnWrites
	holds     *echo.Holds
	metrics   *metrics.Metrics
	log       logr.Logger
	recorder  events.EventRecorder
	budgets   *writer.Budgets
	restSizes *restSizes
}

// Config are a Returner's dependencies (see its fields of the same names).
type Config struct {
	Elsewhere func(context.Context, *inputs.Object) (bool, error)
	Engine    aggregationStates
	Dests     *inputs.DestsCache
	Writer    *writer.Writer
	Report    *report.Reporter
	OwnWrites *echo.OwnWrites
	// Holds: a return's labels, written on the version the object was read at, hold that version
	// in the Bindings that list it (echo.Holds) from before the write, so that no reconcile of a
	// policy records the return's version between the write and its event (nil: the event alone
	// does; nil unless statusfold resolves the Bindings).
	Holds    *echo.Holds
	Metrics  *metrics.Metrics
	Log      logr.Logger
	Recorder events.EventRecorder
	// Budgets are the object size budgets (nil: the default budget).
	Budgets *writer.Budgets
}

// New returns the status returner of c's dependencies, with no State yet.
func New(c Config) *Returner {
	r := &Returner{elsewhere: c.Elsewhere, engine: c.Engine, states: newReturnStates(), memo: newReturnMemo(), dests: c.Dests,
		writer: c.Writer, report: c.Report, ownWrites: c.OwnWrites, holds: c.Holds, metrics: c.Metrics, log: c.Log, recorder: c.Recorder,
		budgets: c.Budgets, restSizes: newRestSizes()}
	if r.budgets == nil {
		r.budgets = writer.NewBudgets(0)
	}
	return r
}

// Write applies the docs/rules.md "Status return" decision to the object's own status and
// executing-count label. It reports whether it wrote anything.
func (r *Returner) Write(ctx context.Context, in *inputs.Object) (bool, error) {
	if in.Obj == nil {
		r.memo.forget(in.Key)
		r.states.forget(in.Key)
		return false, nil
	}
	if rules.NeverWritten[in.Key.GroupResource()] {
		return false, nil
	}
	var input rules.ReturnInput
	var qs []string // the qualified WECs, sorted
	for _, b := range in.Bindings {
		m := b.Bound.Modulation
		if !m.WantSingletonReportedState && !m.WantMultiWECReportedState {
			continue
		}
		input.Singleton = input.Singleton || m.WantSingletonReportedState
		input.Multi = input.Multi || m.WantMultiWECReportedState
		qs = rules.UnionSorted(qs, r.dests.Of(b.Binding))
	}
	input.Qualified = len(qs)
	if !input.Singleton && !input.Multi && writer.AppliedBy(in.Obj, rules.FieldManager) {
		// Removing statusfold's return: unless the object is returned under another resource.
		elsewhere, err := r.elsewhere(ctx, in)
		if err != nil {
			return false, err
		}
		input.ReturnedElsewhere = elsewhere
	}
	d := rules.DecideReturn(input)
	if d.Mode == rules.ReturnLeave {
		return false, nil
	}
	var status map[string]any
	if d.Mode == rules.ReturnNothing {
		r.states.forget(in.Key)
	} else {
		var err error
		status, err = r.computeReturn(in, qs)
		if err != nil {
			r.metrics.Errors.WithLabelValues("aggregation").Inc()
			r.report.Failure(in.Key, "AggregationFailed", "%v", err)
			return false, nil // retried when an input changes
		}
	}
	labels := map[string]string{}
	if d.Label {
		labels[rules.LabelExecutingCount] = strconv.Itoa(input.Qualified)
	}
	if l := d.Mode.Label(); l != "" {
		labels[l] = "true"
	}
	return r.writeWithin(ctx, in, labels, status)
}

// pruneToSchema prunes a returned status to the WDS's schema for the object's kind (see
// writer.PruneStatus) and returns it with the paths it dropped. When the schema cannot be read the
// status is returned whole (the apiserver then decides) and the failure is counted and logged.
func (r *Returner) pruneToSchema(in *inputs.Object, status map[string]any) (map[string]any, []string) {
	if status == nil {
		return nil, nil
	}
	t, err := r.writer.StatusTree(in.Info.GVK())
	if errors.Is(err, resolver.ErrSchemaNotFound) {
		// The WDS publishes no schema for the kind (e.g. an aggregated API without OpenAPI):
		// the apiserver decides.
		return status, nil
	}
	if err != nil {
		r.metrics.Errors.WithLabelValues("schema").Inc()
		r.report.Failure(in.Key, "SchemaUnavailable", "status returned unpruned: no schema for %s: %v", in.Info.GVK(), err)
		return status, nil
	}
	return writer.PruneStatus(status, t)
}

// computeReturn copies or aggregates the qualified WECs' reported states through the engine's
// incremental State of the object: only WECs whose WorkStatus (or classifier) changed are
// re-read — found from the WECs changed since the previous evaluation when the State was fed by
// it, else by comparing every qualified WEC's signature.
func (r *Returner) computeReturn(in *inputs.Object, q []string) (map[string]any, error) {
	gk := schema.GroupKind{Group: in.Info.GVR.Group, Kind: in.Info.Kind}
	rs := r.states.get(in.Key, gk, r.engine)
	if v, changed := rs.object.Update(in.Obj); changed {
		rs.state.SetObject(v)
	}
	for _, name := range rs.Stale(in, &rs.q, q, maps.Keys(rs.sigs), func(wec string) {
		rs.state.RemoveWEC(wec)
		delete(rs.sigs, wec)
	}) {
		sig := in.ReportSig(name)
		if old, ok := rs.sigs[name]; ok && old == sig {
			continue
		}
		w := aggregation.WEC{Name: name}
		rep := in.ReportedOnce(name)
		if m, ok := compactjson.Expand(rep.Status).(map[string]any); ok {
			w.Status = m
		}
		// A status over the size cap is unknown, not absent: the WEC takes part without a status
		// and with unknown statusDetails, so it is never current and the aggregate's
		// observedGeneration stays below the WDS generation (docs/rules.md "Reported status size").
		if ws := in.WorkStatus(name); ws != nil && rep.Oversize == "" {
			w.Details = ws.StatusDetails.DeepCopy()
		}
		rs.state.UpsertWEC(w)
		rs.sigs[name] = sig
	}
	rs.Fed(in)
	return rs.state.Result()
}

// writeReturn brings the object's return labels (rules.ReturnLabels; labels holds those wanted) and
// status to what is wanted, with server-side apply under FieldManager: the labels on the main
// resource, the status on the status subresource (or both on the main resource for kinds without
// one). Fields that other managers own are never taken over: a conflict is reported, not forced.
func (r *Returner) writeReturn(ctx context.Context, in *inputs.Object, labels map[string]string, status map[string]any, dropped []string) (bool, error) {
	obj := in.Obj
	statusSub := "status"
	if !in.Info.HasStatus {
		statusSub = ""
	}
	labelOK := labelsCurrent(obj, labels)
	statusOK, statusJSON, err := r.statusCurrent(in, status, statusSub)
	if err != nil {
		return false, err
	}
	if labelOK && statusOK {
		return false, nil
	}
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(obj.GroupVersionKind())
		u.SetNamespace(obj.GetNamespace())
		u.SetName(obj.GetName())
		return u
	}
	wrote := false
	var skip []string // status fields left out by the applies below
	if !labelOK || (statusSub == "" && !statusOK) {
		u := base()
		// The resource version makes the apply conditional: it never re-creates a deleted object.
		u.SetResourceVersion(obj.GetResourceVersion())
		if len(labels) > 0 {
			u.SetLabels(labels)
		}
		if statusSub == "" && status != nil {
			u.Object["status"] = without(statusJSON, nil) // a copy: applyReturn may remove fields
		}
		left, err := r.applyReturn(ctx, u, "", in)
		if err != nil {
			return wrote, err
		}
		skip = append(skip, left...)
		wrote = true
	}
	if statusSub != "" && !statusOK {
		u := base()
		if status != nil {
			u.Object["status"] = without(statusJSON, nil)
		}
		left, err := r.applyReturn(ctx, u, statusSub, in)
		if err != nil {
			return wrote, err
		}
		skip = append(skip, left...)
		wrote = true
	}
	if !statusOK && len(dropped) > 0 {
		r.reportDropped(in, dropped)
	}
	if status == nil {
		r.memo.forget(in.Key)
	} else if !statusOK {
		r.memo.set(in.Key, obj.GetUID(), statusJSON, skip)
	}
	return wrote, nil
}

// labelsCurrent reports whether obj carries exactly the return labels wanted (labels), owned by
// FieldManager, and no other of rules.ReturnLabels that FieldManager owns.
func labelsCurrent(obj *unstructured.Unstructured, labels map[string]string) bool {
	owned := writer.Owned(obj, "")
	for _, k := range rules.ReturnLabels {
		want, wanted := labels[k]
		owns := writer.Owns(owned, "metadata", "labels", k)
		cur, has := obj.GetLabels()[k]
		if wanted != owns || (wanted && (!has || cur != want)) {
			return false
		}
	}
	return true
}

// statusCurrent reports whether the object's status (on the subresource statusSub, "" for the
// main resource) already is the status wanted (nil: none of statusfold's), and returns the wanted
// status as JSON ("" for nil).
func (r *Returner) statusCurrent(in *inputs.Object, status map[string]any, statusSub string) (bool, string, error) {
	obj := in.Obj
	ownsStatus := writer.Owns(writer.Owned(obj, statusSub), "status")
	statusJSON := ""
	if status != nil {
		b, err := json.Marshal(status)
		if err != nil {
			return false, "", err
		}
		statusJSON = string(b)
	}
	memo, skipped := r.memo.get(in.Key, obj.GetUID())
	if status == nil {
		return !ownsStatus, statusJSON, nil
	}
	cur, _ := obj.Object["status"].(map[string]any)
	// The fields the previous write of this same status left out (owned by others, or
	// rejected) are not expected: the status is not re-applied, to conflict again, at every
	// evaluation, only when it changes.
	return memo == statusJSON && (ownsStatus || len(skipped) > 0) && contains(cur, without(statusJSON, skipped)), statusJSON, nil
}

// applyReturn applies without forcing. When other field managers own some of the fields with
// other values, those fields are left to them: they are dropped from the apply, which is retried
// with the rest. Likewise, status fields that the kind's validation rejects (e.g. a Job's
// completionTime without a Complete condition) are dropped and the rest is written. Events name
// what was left out; nothing is retried in a loop.
func (r *Returner) applyReturn(ctx context.Context, u *unstructured.Unstructured, sub string, in *inputs.Object) ([]string, error) {
	var owned, rejected, left []string
	own, written := in.Key.String(), ""
	r.ownWrites.Begin(own, "status")
	held := false
	defer func() {
		r.ownWrites.End(own, written)
		if held && written == "" {
			r.holds.Release(in.Key) // nothing written: nothing to hold
		}
	}()
	if _, status := u.Object["status"]; !status && u.GetResourceVersion() != "" {
		// A conditional write of labels only: what follows the version is this return alone,
		// which changes nothing delivered (with a status, a kind without a status subresource
		// counts it in its generation: that write is not held).
		held = r.holds.Quiet(in.Key, u.GetResourceVersion())
	}
	for attempt := 0; ; attempt++ {
		err := r.writer.SendFor(ctx, in.Key, pacing.WriteReturnedStatus, r.writer.Prepare(u), sub, false, "status")
		if err == nil {
			written = u.GetResourceVersion()
			break
		}
		conflicts, invalid := writer.ConflictFields(err), writer.InvalidStatusFields(err)
		switch {
		case attempt < 4 && len(conflicts) > 0 && writer.RemoveFields(u.Object, conflicts):
			r.metrics.Conflicts.Inc()
			owned = append(owned, conflicts...)
			left = append(left, conflicts...)
		case attempt < 4 && apierrors.IsInvalid(err) && len(invalid) > 0 && writer.RemoveFields(u.Object, invalid):
			r.metrics.Errors.WithLabelValues("invalid-status").Inc()
			rejected = append(rejected, err.Error())
			left = append(left, invalid...)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || len(conflicts) > 0:
			r.metrics.Errors.WithLabelValues("status-not-returned").Inc()
			r.log.Info("status not returned", "key", in.Key.String(), "error", err.Error())
			r.recorder.Eventf(in.Obj, nil, corev1.EventTypeWarning, "StatusNotReturned", "ReturnStatus", "%s", err.Error())
			return []string{".status"}, nil
		default:
			return nil, err
		}
	}
	if len(owned) > 0 {
		r.recorder.Eventf(in.Obj, nil, corev1.EventTypeNormal, "FieldsOwnedByOthers", "ReturnStatus",
			"not written because another field manager owns them: %s", strings.Join(owned, ", "))
	}
	if len(rejected) > 0 {
		r.recorder.Eventf(in.Obj, nil, corev1.EventTypeWarning, "StatusFieldsRejected", "ReturnStatus",
			"written without the fields the apiserver rejected: %s", strings.Join(rejected, "; "))
	}
	return left, nil
}

// reportDropped reports the status fields that the WDS's schema of the kind does not declare and
// that were therefore not written (once per write that left them out).
func (r *Returner) reportDropped(in *inputs.Object, dropped []string) {
	r.metrics.Dropped.WithLabelValues("schema").Add(float64(len(dropped)))
	msg := fmt.Sprintf("status written without fields that the WDS's schema of %s does not declare: %s",
		in.Info.GVK().GroupKind(), strings.Join(dropped, ", "))
	r.log.Info("status fields dropped", "key", in.Key.String(), "fields", dropped)
	r.recorder.Eventf(in.Obj, nil, corev1.EventTypeWarning, "StatusFieldsDropped", "ReturnStatus", "%s", report.Truncate(msg, 1024))
}

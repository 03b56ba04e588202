package aggregator

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

// statusReturner decides, from the inputs that the gatherer read, what statusfold returns into a
// workload object's own status (docs/rules.md "Status return": a copy, an aggregate or nothing)
// and writes it, with the return labels, pruned to the WDS's schema of the kind.
type statusReturner struct {
	// elsewhere reports whether the object is returned under another resource
	// (gatherer.returnedElsewhere): asked only before a return is removed.
	elsewhere func(context.Context, *objectInputs) (bool, error)
	engine    aggregationStates
	states    *returnStates
	memo      *returnMemo
	dests     *destsCache
	writer    *writer.Writer
	report    *report.Reporter
	ownWrites *echo.OwnWrites
	metrics   *metrics.Metrics
	log       logr.Logger
	recorder  events.EventRecorder
}

// neverWritten are the resources whose objects statusfold never writes (docs/rules.md "Status return").
var neverWritten = map[schema.GroupResource]bool{
	{Group: "", Resource: "namespaces"}:                                    true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// write applies the docs/rules.md "Status return" decision to the object's own status and
// executing-count label. It reports whether it wrote anything.
func (r *statusReturner) write(ctx context.Context, in *objectInputs) (bool, error) {
	if in.obj == nil {
		r.memo.forget(in.key)
		r.states.forget(in.key)
		return false, nil
	}
	if neverWritten[in.key.GroupResource()] {
		return false, nil
	}
	var input rules.ReturnInput
	var qs []string // the qualified WECs, sorted
	for _, b := range in.bindings {
		m := b.bound.Modulation
		if !m.WantSingletonReportedState && !m.WantMultiWECReportedState {
			continue
		}
		input.Singleton = input.Singleton || m.WantSingletonReportedState
		input.Multi = input.Multi || m.WantMultiWECReportedState
		qs = rules.UnionSorted(qs, r.dests.of(b.b))
	}
	input.Qualified = len(qs)
	if !input.Singleton && !input.Multi && writer.AppliedBy(in.obj, rules.FieldManager) {
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
		r.states.forget(in.key)
	} else {
		var err error
		status, err = r.computeReturn(in, qs)
		if err != nil {
			r.metrics.Errors.WithLabelValues("aggregation").Inc()
			r.report.Failure(in.key, "AggregationFailed", "%v", err)
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
	status, dropped := r.pruneToSchema(in, status)
	return r.writeReturn(ctx, in, labels, status, dropped)
}

// pruneToSchema prunes a returned status to the WDS's schema for the object's kind (see
// schemaprune.go) and returns it with the paths it dropped. When the schema cannot be read the
// status is returned whole (the apiserver then decides) and the failure is counted and logged.
func (r *statusReturner) pruneToSchema(in *objectInputs, status map[string]any) (map[string]any, []string) {
	if status == nil {
		return nil, nil
	}
	t, err := r.writer.StatusTree(in.info.GVK())
	if errors.Is(err, resolver.ErrSchemaNotFound) {
		// The WDS publishes no schema for the kind (e.g. an aggregated API without OpenAPI):
		// the apiserver decides.
		return status, nil
	}
	if err != nil {
		r.metrics.Errors.WithLabelValues("schema").Inc()
		r.report.Failure(in.key, "SchemaUnavailable", "status returned unpruned: no schema for %s: %v", in.info.GVK(), err)
		return status, nil
	}
	return writer.PruneStatus(status, t)
}

// computeReturn copies or aggregates the qualified WECs' reported states through the engine's
// incremental State of the object: only WECs whose WorkStatus (or classifier) changed are
// re-read — found from the WECs changed since the previous evaluation when the State was fed by
// it, else by comparing every qualified WEC's signature.
func (r *statusReturner) computeReturn(in *objectInputs, q []string) (map[string]any, error) {
	gk := schema.GroupKind{Group: in.info.GVR.Group, Kind: in.info.Kind}
	rs := r.states.get(in.key, gk, r.engine)
	if v, changed := rs.object.update(in.obj); changed {
		rs.state.SetObject(v)
	}
	for _, name := range rs.stale(in, &rs.q, q, maps.Keys(rs.sigs), func(wec string) {
		rs.state.RemoveWEC(wec)
		delete(rs.sigs, wec)
	}) {
		sig := in.reportSig(name)
		if old, ok := rs.sigs[name]; ok && old == sig {
			continue
		}
		w := aggregation.WEC{Name: name}
		if m, ok := compactjson.Expand(in.reportedOnce(name).status).(map[string]any); ok {
			w.Status = m
		}
		if ws := in.workStatus(name); ws != nil {
			w.Details = ws.StatusDetails.DeepCopy()
		}
		rs.state.UpsertWEC(w)
		rs.sigs[name] = sig
	}
	rs.fed(in)
	return rs.state.Result()
}

// writeReturn brings the object's return labels (rules.ReturnLabels; labels holds those wanted) and
// status to what is wanted, with server-side apply under FieldManager: the labels on the main
// resource, the status on the status subresource (or both on the main resource for kinds without
// one). Fields that other managers own are never taken over: a conflict is reported, not forced.
func (r *statusReturner) writeReturn(ctx context.Context, in *objectInputs, labels map[string]string, status map[string]any, dropped []string) (bool, error) {
	obj := in.obj
	statusSub := "status"
	if !in.info.HasStatus {
		statusSub = ""
	}
	labelOK := true
	owned := writer.OwnedAt(obj, "", "f:metadata", "f:labels")
	for _, k := range rules.ReturnLabels {
		want, wanted := labels[k]
		_, owns := owned["f:"+k]
		cur, has := obj.GetLabels()[k]
		if wanted != owns || (wanted && (!has || cur != want)) {
			labelOK = false
			break
		}
	}
	ownsStatus := writer.OwnsField(obj, statusSub, "f:status")
	statusJSON := ""
	if status != nil {
		b, err := json.Marshal(status)
		if err != nil {
			return false, err
		}
		statusJSON = string(b)
	}
	memo, skipped := r.memo.get(in.key, obj.GetUID())
	var statusOK bool
	if status == nil {
		statusOK = !ownsStatus
	} else {
		cur, _ := obj.Object["status"].(map[string]any)
		// The fields the previous write of this same status left out (owned by others, or
		// rejected) are not expected: the status is not re-applied, to conflict again, at every
		// evaluation, only when it changes.
		statusOK = memo == statusJSON && (ownsStatus || len(skipped) > 0) && contains(cur, without(statusJSON, skipped))
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
		r.memo.forget(in.key)
	} else if !statusOK {
		r.memo.set(in.key, obj.GetUID(), statusJSON, skip)
	}
	return wrote, nil
}

// applyReturn applies without forcing. When other field managers own some of the fields with
// other values, those fields are left to them: they are dropped from the apply, which is retried
// with the rest. Likewise, status fields that the kind's validation rejects (e.g. a Job's
// completionTime without a Complete condition) are dropped and the rest is written. Events name
// what was left out; nothing is retried in a loop.
func (r *statusReturner) applyReturn(ctx context.Context, u *unstructured.Unstructured, sub string, in *objectInputs) ([]string, error) {
	var owned, rejected, left []string
	own, written := in.key.String(), ""
	r.ownWrites.Begin(own)
	defer func() { r.ownWrites.End(own, written) }()
	for attempt := 0; ; attempt++ {
		err := r.writer.SendFor(ctx, in.key, pacing.WriteReturnedStatus, r.writer.Prepare(u), sub, false, "status")
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
			r.log.Info("status not returned", "key", in.key.String(), "error", err.Error())
			r.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusNotReturned", "ReturnStatus", "%s", err.Error())
			return []string{".status"}, nil
		default:
			return nil, err
		}
	}
	if len(owned) > 0 {
		r.recorder.Eventf(in.obj, nil, corev1.EventTypeNormal, "FieldsOwnedByOthers", "ReturnStatus",
			"not written because another field manager owns them: %s", strings.Join(owned, ", "))
	}
	if len(rejected) > 0 {
		r.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusFieldsRejected", "ReturnStatus",
			"written without the fields the apiserver rejected: %s", strings.Join(rejected, "; "))
	}
	return left, nil
}

// reportDropped reports the status fields that the WDS's schema of the kind does not declare and
// that were therefore not written (once per write that left them out).
func (r *statusReturner) reportDropped(in *objectInputs, dropped []string) {
	r.metrics.Dropped.WithLabelValues("schema").Add(float64(len(dropped)))
	msg := fmt.Sprintf("status written without fields that the WDS's schema of %s does not declare: %s",
		in.info.GVK().GroupKind(), strings.Join(dropped, ", "))
	r.log.Info("status fields dropped", "key", in.key.String(), "fields", dropped)
	r.recorder.Eventf(in.obj, nil, corev1.EventTypeWarning, "StatusFieldsDropped", "ReturnStatus", "%s", report.Truncate(msg, 1024))
}

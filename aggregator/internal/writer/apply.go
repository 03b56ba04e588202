package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/tools/events"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// ToApply turns a typed object into a server-side apply configuration: apiVersion and kind from
// the scheme's group version, no status unless keepStatus, no server-set metadata.
func ToApply(obj client.Object, kind string, keepStatus bool) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind(kind))
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	if !keepStatus {
		unstructured.RemoveNestedField(u.Object, "status")
	}
	return u, nil
}

// Writer makes statusfold's writes: server-side applies under FieldManager, each counted, with
// the objects of KubeStellar's group pruned to the schema the apiserver serves for their kind.
// Every part that writes uses it.
type Writer struct {
	wds     client.Client
	schemas resolver.SchemaResolver
	// trees are the compiled status and object schemas of the kinds (schemaprune.go): the
	// served schemas of our writes (pruneToServed) and the status schemas of returned statuses
	// (statusTree).
	trees *fieldTrees
	// servedDrops are the (kind, served schema, dropped fields) already reported.
	servedDrops *lru.Cache
	failures    *report.Throttle
	metrics     *metrics.Metrics
	// pacer receives the writes of workload objects' CombinedStatuses and returned status
	// (SendFor, Observe); nil: not paced. Binding and our kinds' writes are not paced.
	pacer    *pacing.Pacer[rules.ObjectKey]
	log      logr.Logger
	recorder events.EventRecorder
}

// newWriter returns the writer of the client wds, pruning to the schemas of schemas, reporting
// failures through failures (rate-limited), metrics and Events, and the writes of workload objects
// to pacer (nil: not paced).
func New(wds client.Client, schemas resolver.SchemaResolver, failures *report.Throttle, m *metrics.Metrics,
	pacer *pacing.Pacer[rules.ObjectKey], log logr.Logger, recorder events.EventRecorder) *Writer {
	return &Writer{wds: wds, schemas: schemas, trees: newFieldTrees(), servedDrops: lru.New(256),
		failures: failures, metrics: m, log: log, recorder: recorder, pacer: pacer}
}

// StatusTree is the compiled status schema of the kind gvk, for PruneStatus
// (resolver.ErrSchemaNotFound when the WDS publishes none).
func (w *Writer) StatusTree(gvk schema.GroupVersionKind) (*FieldTree, error) {
	return w.trees.statusTree(w.schemas, gvk)
}

// Apply server-side applies u under FieldManager, on the main resource, or on the subresource
// when it is not "". force takes fields over from other managers: used for what statusfold alone
// writes (Bindings, CombinedStatuses, our kinds' status), never for workload objects.
func (w *Writer) Apply(ctx context.Context, u *unstructured.Unstructured, subresource string, force bool, what string) error {
	return w.send(ctx, w.Prepare(u), subresource, force, what)
}

// Outgoing is an object as statusfold sends it (Writer.Prepare). An object of KubeStellar's group
// (control.kubestellar.io) is pruned to the schema the apiserver serves for its kind
// (pruneToServed), and applied with fieldValidation=Ignore (applyPruned): what the served schema
// lacks is already dropped and reported, so the apiserver's own pass for unknown and duplicate
// fields would find nothing and only costs CPU (docs/performance.md, "Writing cheaper"). A field
// the apiserver still refuses fails the apply as before (server-side apply rejects a field its
// schema does not declare whatever the validation level).
type Outgoing struct {
	u       *unstructured.Unstructured // as built; given the apiserver's answer by send
	Sent    *unstructured.Unstructured // what is sent: u, or u pruned when that dropped fields
	served  *spec.Schema               // the served schema sent was pruned to (nil: unknown)
	Dropped []string                   // the paths pruning dropped
	pruned  bool                       // of KubeStellar's group
}

// Prepare makes u ready to send, pruned when it is of KubeStellar's group. A caller that must
// look at what will be sent (the CombinedStatus writer's servedCurrent) prepares it once for both.
func (w *Writer) Prepare(u *unstructured.Unstructured) Outgoing {
	o := Outgoing{u: u, Sent: u, pruned: u.GroupVersionKind().Group == controlv1alpha1.GroupVersion.Group}
	if o.pruned {
		o.Sent, o.served, o.Dropped = w.PruneToServed(u)
	}
	return o
}

// send applies o as apply describes.
func (w *Writer) send(ctx context.Context, o Outgoing, subresource string, force bool, what string) error {
	u, sent := o.u, o.Sent
	var err error
	switch {
	case o.pruned:
		err = w.applyPruned(ctx, sent, subresource, force)
	case subresource == "":
		opts := []client.ApplyOption{client.FieldOwner(rules.FieldManager)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		err = w.wds.Apply(ctx, client.ApplyConfigurationFromUnstructured(sent), opts...)
	default:
		opts := []client.SubResourceApplyOption{client.FieldOwner(rules.FieldManager)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		err = w.wds.SubResource(subresource).Apply(ctx, client.ApplyConfigurationFromUnstructured(sent), opts...)
	}
	if err != nil {
		w.metrics.Errors.WithLabelValues("write").Inc()
		if sent != u || o.served != nil {
			w.refreshOnSchemaRejection(err)
		}
		return fmt.Errorf("apply %s %s/%s: %w", what, u.GetNamespace(), u.GetName(), err)
	}
	if sent != u {
		u.Object = sent.Object // the apiserver's answer, as for an unpruned apply
	}
	w.metrics.Writes.WithLabelValues(what, "apply").Inc()
	if len(o.Dropped) > 0 {
		w.reportServedDrops(u, o.served, o.Dropped)
	}
	return nil
}

// SendFor is send for a write of kind made for workload object key (its CombinedStatus or its
// returned status and labels): the write is reported to the Pacer, whatever its outcome.
func (w *Writer) SendFor(ctx context.Context, key rules.ObjectKey, kind pacing.WriteKind, o Outgoing, subresource string, force bool, what string) error {
	start := time.Now()
	err := w.send(ctx, o, subresource, force, what)
	w.Observe(key, kind, start, err)
	return err
}

// Observe reports a write of kind made for workload object key, started at start and ended now
// with err, to the Pacer (docs/controller.md, "Pacing writes").
func (w *Writer) Observe(key rules.ObjectKey, kind pacing.WriteKind, start time.Time, err error) {
	end := time.Now()
	w.metrics.Durations.WithLabelValues(kind.String()).Observe(end.Sub(start).Seconds())
	if w.pacer != nil {
		w.pacer.ObserveWrite(key, kind, start, end, pacing.OutcomeOf(err))
	}
}

// applyPruned server-side applies u, pruned to its served schema, with fieldValidation=Ignore.
// controller-runtime's typed Apply takes no field validation option, so this is a patch of
// type apply (serverSideApply) with the same field owner and force.
func (w *Writer) applyPruned(ctx context.Context, u *unstructured.Unstructured, subresource string, force bool) error {
	if subresource == "" {
		opts := []client.PatchOption{client.FieldOwner(rules.FieldManager), client.FieldValidation(metav1.FieldValidationIgnore)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		return w.wds.Patch(ctx, u, serverSideApply{}, opts...)
	}
	opts := []client.SubResourcePatchOption{client.FieldOwner(rules.FieldManager), client.FieldValidation(metav1.FieldValidationIgnore)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return w.wds.SubResource(subresource).Patch(ctx, u, serverSideApply{}, opts...)
}

// serverSideApply is a server-side apply patch of the whole object: the object itself, as JSON
// (YAML's subset), sent as application/apply-patch+yaml.
type serverSideApply struct{}

var _ client.Patch = serverSideApply{}

func (serverSideApply) Type() types.PatchType { return types.ApplyPatchType }

func (serverSideApply) Data(obj client.Object) ([]byte, error) { return json.Marshal(obj) }

// Served schemas (docs/kubestellar.md, "KubeStellar's CRDs"): KubeStellar's controller-manager
// replaces the CRDs of its kinds with its own at every start, and those lack fields that
// statusfold writes (aggregationErrors[].row and .count, StatusCollector .status.conditions).
// Server-side apply rejects a whole object that holds a field its schema does not declare, so
// every write to a control.kubestellar.io object is pruned to the schema served for its kind —
// with the same compiled field trees and schema resolver as a returned status (schemaprune.go) —
// and what was dropped is reported once per kind and served schema.

// PruneToServed returns u without the fields that the served schema of its kind does not
// declare, with that schema and the paths dropped. When the schema cannot be read u is returned
// whole (the apiserver then decides) and the failure is counted and logged.
func (w *Writer) PruneToServed(u *unstructured.Unstructured) (*unstructured.Unstructured, *spec.Schema, []string) {
	gvk := u.GroupVersionKind()
	t, s, err := w.trees.objectTree(w.schemas, gvk)
	if errors.Is(err, resolver.ErrSchemaNotFound) {
		return u, nil, nil
	}
	if err != nil {
		w.metrics.Errors.WithLabelValues("schema").Inc()
		if ok, n := w.failures.Allow("served-schema\x00"+gvk.String(), time.Now()); ok {
			w.log.Info("failure", "reason", "SchemaUnavailable", "kind", gvk.String(), "suppressed", n,
				"error", fmt.Sprintf("written unpruned: no served schema for %s: %v", gvk, err))
		}
		return u, nil, nil
	}
	obj, dropped := pruneObject(u.Object, t)
	if len(dropped) == 0 {
		return u, s, nil
	}
	return &unstructured.Unstructured{Object: obj}, s, dropped
}

// schemaRefresher is a schema resolver that can be told to look for new published schemas now
// (check.DiscoverySchemas).
type schemaRefresher interface{ Refresh() }

// refreshOnSchemaRejection makes the schema resolver look for new schemas when the apiserver
// rejected a pruned write for a field its schema does not declare: the CRD was replaced (as
// KubeStellar's controller-manager does at every start) since the schema was last read, and the
// retry then prunes to the new one instead of failing until the next periodic look.
func (w *Writer) refreshOnSchemaRejection(err error) {
	if !strings.Contains(err.Error(), "field not declared in schema") {
		return
	}
	if r, ok := w.schemas.(schemaRefresher); ok {
		r.Refresh()
	}
}

// servedDrop identifies a report of reportServedDrops.
type servedDrop struct {
	kind    schema.GroupVersionKind
	schema  *spec.Schema
	dropped string
}

// reportServedDrops counts the fields of a write that the served schema of its kind does not
// declare (statusfold_status_fields_dropped_total, reason served-schema) and, the first time
// for this kind, schema and set of fields, logs them and records a Warning Event on the object.
func (w *Writer) reportServedDrops(u *unstructured.Unstructured, served *spec.Schema, dropped []string) {
	w.metrics.Dropped.WithLabelValues("served-schema").Add(float64(len(dropped)))
	key := servedDrop{kind: u.GroupVersionKind(), schema: served, dropped: strings.Join(dropped, ",")}
	if _, seen := w.servedDrops.Get(key); seen {
		return
	}
	w.servedDrops.Add(key, struct{}{})
	gk := key.kind.GroupKind()
	w.log.Info("fields dropped: not in the served schema", "kind", gk.String(), "fields", dropped,
		"object", client.ObjectKeyFromObject(u).String())
	ref := &corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	w.recorder.Eventf(ref, nil, corev1.EventTypeWarning, "FieldsDropped", "Apply", "%s",
		report.Truncate(fmt.Sprintf("written without fields that the served schema of %s does not declare "+
			"(reported once per kind and schema): %s", gk, strings.Join(dropped, ", ")), 1024))
}

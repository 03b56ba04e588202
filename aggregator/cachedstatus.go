package aggregator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/lru"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// A cached WorkStatus holds its reported state once, decoded (docs/controller.md, "What the
// caches hold"). The ITS cache's transform (trimITSObject) decodes `.status`, keeps it in
// Status.Object as a decodedStatus in compact form (policy/compactjson: the engines read it through
// compactjson.Expand), and drops the raw JSON; it also interns the strings that repeat across
// WorkStatuses (mailbox namespaces, object names, labels, sourceRefs, the status's short values;
// its field names are shared through statusKeySets), and gives WorkStatuses with the same labels
// one shared label map. The decoded value is never modified: the engines only read their inputs,
// ContentClassifier pruning works on an expansion, and a deep copy of the WorkStatus shares it.

// maxInternedValue is the longest string value of a reported status that is interned: short
// values (condition types, statuses, reasons, phases, common messages) repeat across WECs and
// writes; long ones are mostly unique (messages naming a revision), where interning would add
// the interning table's entry to the string instead of saving a copy.
const maxInternedValue = 64

// decodedStatus is a WorkStatus's reported state, decoded once by the ITS cache's transform. It
// is immutable, so DeepCopyObject returns the same value. Its presence also marks the WorkStatus
// as transformed.
type decodedStatus struct {
	value any   // nil: the status is null or absent
	err   error // the status is not JSON (value is nil): reading it fails, as decoding it would
	// written is when the WorkStatus was last written (lastWrite), taken from the managed fields,
	// which the transform drops.
	written time.Time
}

var _ runtime.Object = (*decodedStatus)(nil)

func (d *decodedStatus) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (d *decodedStatus) DeepCopyObject() runtime.Object   { return d }

// transformed reports whether ws went through the ITS cache's transform already.
func transformed(ws *controlv1alpha1.WorkStatus) bool {
	_, ok := ws.Status.Object.(*decodedStatus)
	return ok
}

// decodeFailed reports whether the ITS cache's transform could not decode ws's status.
func decodeFailed(ws *controlv1alpha1.WorkStatus) bool {
	d, ok := ws.Status.Object.(*decodedStatus)
	return ok && d.err != nil
}

// decodeCachedStatus replaces ws's raw status by its decoded, interned form (or by the decoding
// error, which workStatusStatus returns when the status is read, as decoding it then would).
func decodeCachedStatus(ws *controlv1alpha1.WorkStatus) {
	d := &decodedStatus{written: lastWrite(ws)}
	if len(ws.Status.Raw) > 0 {
		var v any
		if err := utiljson.Unmarshal(ws.Status.Raw, &v); err != nil {
			d.err = err
		} else {
			d.value = compactjson.Compact(internValue(v), statusKeySets)
		}
	}
	ws.Status.Raw, ws.Status.Object = nil, d
}

// workStatusStatus returns ws's reported status decoded (nil: none, or null): the cache's decoded
// form (compact: compactjson.Expand reads it as plain values), or the raw JSON decoded now (plain)
// for a WorkStatus that did not come through the ITS cache.
func workStatusStatus(ws *controlv1alpha1.WorkStatus) (any, error) {
	var status any
	var err error
	if d, ok := ws.Status.Object.(*decodedStatus); ok {
		status, err = d.value, d.err
	} else if len(ws.Status.Raw) > 0 {
		err = utiljson.Unmarshal(ws.Status.Raw, &status)
	}
	if err != nil {
		return nil, fmt.Errorf("WorkStatus %s/%s: status: %w", ws.Namespace, ws.Name, err)
	}
	return status, nil
}

// internValue interns the short string values of a decoded JSON value, in place, and returns it.
// (Its map keys are shared by compacting: compactjson's key sets.)
func internValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = internValue(e)
		}
	case []any:
		for i, e := range v {
			v[i] = internValue(e)
		}
	case string:
		if len(v) <= maxInternedValue {
			return internTable.boxed(v)
		}
	}
	return v
}

// statusKeySets shares the key sets of the decoded statuses' objects (the compact form's field
// names): a kind's statuses have a few shapes (a Deployment status, its conditions), which every
// WorkStatus of that kind shares. Bounded like internTable.
var statusKeySets = compactjson.NewKeySets(1 << 12)

// internTable is the intern table of the ITS cache's transform.
var internTable = newStringTable(1 << 16)

func intern(s string) string { return internTable.intern(s) }

// stringTable interns strings: while a string is in the table, every intern of an equal string
// returns the table's copy. It is bounded: when full it starts afresh — strings handed out stay
// valid, and later ones are shared from the new table — so unique strings (timestamps, UIDs)
// cannot make it grow without limit. (unique.Make would not do: its canonical copy lives only
// while a Handle does, so a string held without one is copied again after a collection.)
//
// It holds each string as an interface value (an `any` holding a string points at a string
// header of its own), which boxed hands out: a decoded JSON string value shares that header too,
// instead of each map or list holding one (16 B per string value).
type stringTable struct {
	mu  sync.Mutex
	m   map[string]any // the string → the same string as an interface value
	max int
}

func newStringTable(max int) *stringTable { return &stringTable{m: map[string]any{}, max: max} }

func (t *stringTable) intern(s string) string {
	if s == "" {
		return ""
	}
	return t.boxed(s).(string)
}

// boxed returns the interned s as a shared interface value.
func (t *stringTable) boxed(s string) any {
	if s == "" {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) >= t.max {
		clear(t.m)
	}
	s = strings.Clone(s) // not a part of a larger buffer
	c := any(s)
	t.m[s] = c
	return c
}

// internMeta interns the strings of a cached WorkStatus that repeat across WorkStatuses: its
// mailbox namespace (the WEC's name; one per WEC), its name (the same in every WEC for one
// object), its labels and its sourceRef.
func internMeta(ws *controlv1alpha1.WorkStatus) {
	ws.Namespace, ws.Name, ws.GenerateName = intern(ws.Namespace), intern(ws.Name), intern(ws.GenerateName)
	ws.APIVersion, ws.Kind = intern(ws.APIVersion), intern(ws.Kind)
	ws.Labels = sharedStringMap(internStringMap(ws.Labels))
	ws.Annotations = internStringMap(ws.Annotations)
	r := &ws.Spec.SourceRef
	r.Group, r.Version, r.Resource, r.Kind = intern(r.Group), intern(r.Version), intern(r.Resource), intern(r.Kind)
	r.Namespace, r.Name = intern(r.Namespace), intern(r.Name)
}

// internStringMap interns m's keys and short values in place.
func internStringMap(m map[string]string) map[string]string {
	for k, v := range m {
		if len(v) <= maxInternedValue {
			v = intern(v)
		}
		m[intern(k)] = v
	}
	return m
}

// labelSets holds one instance of each label set of cached WorkStatuses (by its canonical text),
// so the WorkStatuses of one WDS, whose labels are the same, share one map. It is bounded: a label
// set that is not among the most recently used ones gets its own map again.
var labelSets = lru.New(1024)

// maxSharedLabels is the largest label set that is shared (by its number of labels).
const maxSharedLabels = 16

// sharedStringMap returns the shared instance of a map with m's entries. The map is read only:
// cached objects are never modified, and a deep copy copies it.
func sharedStringMap(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > maxSharedLabels {
		return m
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	key := b.String()
	if shared, ok := labelSets.Get(key); ok {
		return shared.(map[string]string)
	}
	labelSets.Add(key, m)
	return m
}

// dropManagedFields drops the managed fields, which statusfold does not read in the ITS cache; the
// newest write time, which it reads (lastWrite), is kept in the decodedStatus.
func dropManagedFields(ws *controlv1alpha1.WorkStatus) {
	ws.ManagedFields = nil
}

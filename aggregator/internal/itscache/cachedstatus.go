package itscache

import (
	"fmt"
	"maps"
	"math"
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
// caches hold"). The ITS cache's transform (TrimITSObject) decodes `.status`, keeps it in
// Status.Object as a decodedStatus in compact form (policy/compactjson: the engines read it through
// compactjson.Expand: one encoded string per status, its field names shared through
// StatusKeySets), and drops the raw JSON; it also interns the strings that repeat across
// WorkStatuses (mailbox namespaces, object names, labels, sourceRefs), and gives WorkStatuses with
// the same labels one shared label map. The decoded value is never modified: the engines only
// read their inputs, ContentClassifier pruning works on an expansion, and a deep copy of the
// WorkStatus shares it.

// maxInternedValue is the longest label or annotation value that is interned: short values
// repeat across WorkStatuses; long ones are mostly unique, where interning would add the
// interning table's entry to the string instead of saving a copy.
const maxInternedValue = 64

// decodedStatus is a WorkStatus's reported state, decoded once by the ITS cache's transform. It
// is immutable, so DeepCopyObject returns the same value. Its presence also marks the WorkStatus
// as transformed. (24 bytes: the cache holds one per WorkStatus.)
type decodedStatus struct {
	// value is the status in compact form (nil: the status is null or absent), or an
	// *unreadableStatus when it is not JSON: reading it fails, as decoding it would.
	value any
	// written is when the WorkStatus was last written (LastWrite), taken from the managed fields,
	// which the transform drops: Unix nanoseconds, or noTime.
	written int64
}

// unreadableStatus is the decoding error of a status that is not JSON.
type unreadableStatus struct{ err error }

// OversizeError is the error of reading a WorkStatus whose reported status is over the ITS
// cache's cap (Transform.MaxStatusBytes): the cache holds its size only.
type OversizeError struct {
	Size int // bytes of the status's JSON
	Max  int // the cap
	// KeyRunes, when not 0, is the length in characters of a key too long for a server-side
	// apply body (MaxApplyKeyRunes), as statusfold writes the key (applykey.Length): the status
	// is under the cap, but could not be written back.
	KeyRunes int
}

func (e *OversizeError) Error() string {
	if e.KeyRunes > 0 {
		return fmt.Sprintf("status not evaluated: the reported status has a key of %d characters, over the %d a server-side apply accepts",
			e.KeyRunes, MaxApplyKeyRunes)
	}
	return fmt.Sprintf("status not evaluated: the reported status is %d bytes, over the cap of %d bytes on a reported status", e.Size, e.Max)
}

// Oversize returns the OversizeError of a cached WorkStatus whose reported status is over the
// cap, else nil.
func Oversize(ws *controlv1alpha1.WorkStatus) *OversizeError {
	if d, ok := ws.Status.Object.(*decodedStatus); ok {
		if u, failed := d.value.(*unreadableStatus); failed {
			if o, ok := u.err.(*OversizeError); ok {
				return o
			}
		}
	}
	return nil
}

// noTime is decodedStatus.written for the zero time.
const noTime = math.MinInt64

func (d *decodedStatus) writtenAt() time.Time {
	if d.written == noTime {
		return time.Time{}
	}
	return time.Unix(0, d.written).UTC()
}

var _ runtime.Object = (*decodedStatus)(nil)

func (d *decodedStatus) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (d *decodedStatus) DeepCopyObject() runtime.Object   { return d }

// Transformed reports whether ws went through the ITS cache's transform already.
func Transformed(ws *controlv1alpha1.WorkStatus) bool {
	_, ok := ws.Status.Object.(*decodedStatus)
	return ok
}

// DecodeFailed reports whether the ITS cache's transform could not decode ws's status.
func DecodeFailed(ws *controlv1alpha1.WorkStatus) bool {
	d, ok := ws.Status.Object.(*decodedStatus)
	if !ok {
		return false
	}
	_, failed := d.value.(*unreadableStatus)
	return failed
}

// decodeCachedStatus replaces ws's raw status by its decoded, compact form (or by the decoding
// error, which WorkStatusStatus returns when the status is read, as decoding it then would). A
// status over maxBytes (> 0) is not decoded: only its size is kept (an *OversizeError).
func decodeCachedStatus(ws *controlv1alpha1.WorkStatus, maxBytes int) {
	d := &decodedStatus{written: noTime}
	if t := LastWrite(ws); !t.IsZero() {
		d.written = t.UnixNano()
	}
	if n := len(ws.Status.Raw); maxBytes > 0 && n > maxBytes {
		d.value = &unreadableStatus{err: &OversizeError{Size: n, Max: maxBytes}}
	} else if k := longKey(ws.Status.Raw); k > 0 {
		d.value = &unreadableStatus{err: &OversizeError{Size: n, Max: maxBytes, KeyRunes: k}}
	} else if n > 0 {
		// A status is an object: compactjson decodes it straight from its JSON. Anything else,
		// and JSON it rejects, is decoded as the engines decode JSON (for their error).
		if o, err := compactjson.Decode(ws.Status.Raw, StatusKeySets); err == nil {
			d.value = o
		} else {
			var v any
			if err := utiljson.Unmarshal(ws.Status.Raw, &v); err != nil {
				d.value = &unreadableStatus{err: err}
			} else {
				d.value = compactjson.Compact(v, StatusKeySets)
			}
		}
	}
	ws.Status.Raw, ws.Status.Object = nil, d
}

// WorkStatusStatus returns ws's reported status decoded (nil: none, or null): the cache's decoded
// form (compact: compactjson.Expand reads it as plain values), or the raw JSON decoded now (plain)
// for a WorkStatus that did not come through the ITS cache.
func WorkStatusStatus(ws *controlv1alpha1.WorkStatus) (any, error) {
	var status any
	var err error
	if d, ok := ws.Status.Object.(*decodedStatus); ok {
		if u, failed := d.value.(*unreadableStatus); failed {
			err = u.err
		} else {
			status = d.value
		}
	} else if len(ws.Status.Raw) > 0 {
		err = utiljson.Unmarshal(ws.Status.Raw, &status)
	}
	if err != nil {
		return nil, fmt.Errorf("WorkStatus %s/%s: status: %w", ws.Namespace, ws.Name, err)
	}
	return status, nil
}

// StatusKeySets shares the key sets of the decoded statuses' objects (the compact form's field
// names): a kind's statuses have a few shapes (a Deployment status, its conditions), which every
// WorkStatus of that kind shares. Bounded like internTable.
var StatusKeySets = compactjson.NewKeySets(1 << 12)

// internTable is the intern table of the ITS cache's transform.
var internTable = newStringTable(1 << 16)

func intern(s string) string { return internTable.intern(s) }

// stringTable interns strings: while a string is in the table, every intern of an equal string
// returns the table's copy. It is bounded: when full it starts afresh — strings handed out stay
// valid, and later ones are shared from the new table — so unique strings (timestamps, UIDs)
// cannot make it grow without limit. (unique.Make would not do: its canonical copy lives only
// while a Handle does, so a string held without one is copied again after a collection.)
type stringTable struct {
	mu  sync.Mutex
	m   map[string]string
	max int
}

func newStringTable(max int) *stringTable { return &stringTable{m: map[string]string{}, max: max} }

func (t *stringTable) intern(s string) string {
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
	t.m[s] = s
	return s
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
// newest write time, which it reads (LastWrite), is kept in the decodedStatus.
func dropManagedFields(ws *controlv1alpha1.WorkStatus) {
	ws.ManagedFields = nil
}

// LastWrite is when a WorkStatus was last written: the newest managedFields time, else its
// creation time (kept by the ITS cache's transform, which drops the managed fields).
func LastWrite(ws *controlv1alpha1.WorkStatus) time.Time {
	if d, ok := ws.Status.Object.(*decodedStatus); ok {
		return d.writtenAt() // the ITS cache's transform took it from the managed fields
	}
	t := ws.CreationTimestamp.Time
	for _, mf := range ws.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t.UTC()
}

package aggregator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	dto "github.com/prometheus/client_model/go"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// deploymentStatus is a Deployment-shaped reported status like the load test's (test/load
// DeploymentStatus): seq makes the Progressing condition's timestamps and message differ per write.
func deploymentStatus(seq int) map[string]any {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := epoch.Add(time.Duration(seq) * time.Second).Format(time.RFC3339)
	return map[string]any{
		"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
		"collisionCount": seq,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
				"message": "Deployment has minimum availability.", "lastUpdateTime": epoch.Format(time.RFC3339), "lastTransitionTime": epoch.Format(time.RFC3339)},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
				"message":        fmt.Sprintf("ReplicaSet %q has successfully progressed (write %d).", "app-5d8f7c9b4", seq),
				"lastUpdateTime": ts, "lastTransitionTime": ts},
		},
	}
}

// wireWorkStatus decodes a WorkStatus from its JSON, as the informer's decoder does, so that every
// string and the raw status are separate allocations, as in the cache.
func wireWorkStatus(t testing.TB, wec, obj string, seq int, status any) *controlv1alpha1.WorkStatus {
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "WorkStatus",
		"metadata": map[string]any{
			"name": "apps-v1-deployment-default-" + obj, "namespace": wec, "uid": fmt.Sprintf("uid-%s-%s", wec, obj),
			"resourceVersion": fmt.Sprint(1000 + seq), "creationTimestamp": "2026-01-01T00:00:00Z",
			"labels": map[string]string{controlv1alpha1.LabelOriginWDSName: "wds1"},
			"managedFields": []any{map[string]any{"manager": "agent", "operation": "Update", "apiVersion": "control.kubestellar.io/v1alpha1",
				"time": "2026-01-01T00:00:05Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{".": map[string]any{}}}}},
		},
		"spec":          map[string]any{"sourceRef": map[string]any{"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment", "namespace": "default", "name": obj}},
		"status":        json.RawMessage(raw),
		"statusDetails": map[string]any{"lastGeneration": 1, "lastGenerationIsApplied": true, "lastCurrencyUpdateTime": "2026-01-01T00:00:00Z", "wecGeneration": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ws controlv1alpha1.WorkStatus
	if err := json.Unmarshal(body, &ws); err != nil {
		t.Fatal(err)
	}
	return &ws
}

func TestTrimITSObjectDecodesTheStatusOnce(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		want   any  // what the readers get
		decode bool // the raw JSON is dropped
		err    bool
	}{
		{"object", `{"replicas":3,"ready":2.5,"conditions":[{"type":"Available","status":"True"}]}`,
			map[string]any{"replicas": int64(3), "ready": 2.5, "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}, true, false},
		{"scalar", `"Running"`, "Running", true, false},
		{"null", `null`, nil, true, false},
		{"absent", ``, nil, false, false},
		{"not JSON: its error shows when read", `{"a":`, nil, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "ws"}}
			if tc.raw != "" {
				ws.Status.Raw = []byte(tc.raw)
			}
			before, beforeErr := workStatusStatus(ws)
			out, err := trimITSObject(ws)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*controlv1alpha1.WorkStatus)
			if decoded := got.Status.Raw == nil && tc.raw != ""; decoded != tc.decode {
				t.Errorf("raw status dropped = %v, want %v", decoded, tc.decode)
			}
			held, afterErr := workStatusStatus(got)
			if (afterErr != nil) != tc.err || (beforeErr != nil) != tc.err {
				t.Fatalf("errors before/after the transform = %v / %v, want an error: %v", beforeErr, afterErr, tc.err)
			}
			if _, isMap := tc.want.(map[string]any); isMap {
				if _, compact := held.(*compactjson.Object); !compact {
					t.Errorf("the cache holds the status as %T, want it compact", held)
				}
			}
			after := compactjson.Expand(held)
			if !reflect.DeepEqual(after, tc.want) || !reflect.DeepEqual(before, after) {
				t.Errorf("status after the transform = %#v, before %#v, want %#v", after, before, tc.want)
			}
			// A deep copy (what a cache read without UnsafeDisableDeepCopy returns) reads the same.
			if cp, _ := workStatusStatus(got.DeepCopy()); cp != held || !reflect.DeepEqual(compactjson.Expand(cp), tc.want) {
				t.Errorf("status of a deep copy = %#v, want %#v", cp, tc.want)
			}
		})
	}
}

func TestTrimITSObjectInternsRepeatedStrings(t *testing.T) {
	a := wireWorkStatus(t, "wec-0001", "app-0001", 1, deploymentStatus(1))
	b := wireWorkStatus(t, "wec-0001", "app-0001", 2, deploymentStatus(2))
	for _, ws := range []*controlv1alpha1.WorkStatus{a, b} {
		if _, err := trimITSObject(ws); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string", what, x, y)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("name", a.Name, b.Name)
	same("sourceRef.name", a.Spec.SourceRef.Name, b.Spec.SourceRef.Name)
	same("sourceRef.resource", a.Spec.SourceRef.Resource, b.Spec.SourceRef.Resource)
	same("label value", a.Labels[controlv1alpha1.LabelOriginWDSName], b.Labels[controlv1alpha1.LabelOriginWDSName])
	for k := range a.Labels {
		for k2 := range b.Labels {
			same("label key", k, k2)
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Errorf("equal label sets are two maps, want one shared map")
	}
	c := wireWorkStatus(t, "wec-0002", "app-0001", 3, nil)
	c.Labels["other"] = "x"
	if _, err := trimITSObject(c); err != nil {
		t.Fatal(err)
	}
	if len(c.Labels) != 2 || c.Labels["other"] != "x" || len(a.Labels) != 1 {
		t.Errorf("labels of another set = %v (first set %v), want their own", c.Labels, a.Labels)
	}
	heldA, _ := workStatusStatus(a)
	if _, ok := heldA.(*compactjson.Object); !ok {
		t.Fatalf("the cached status is a %T, want it compact", heldA)
	}
	// The decoded value is what the report is: an evaluation reads it without decoding or copying.
	g := &gatherer{wecs: newWECIndex(), reports: newReportCache(), metrics: newMetrics(), log: logr.Discard()}
	g.wecs.update(nil, a)
	in := &objectInputs{g: g, key: rules.WorkStatusObject(a)}
	r := in.reportedOnce(a.Namespace)
	if r.status != heldA {
		t.Errorf("the report is a copy of the cached status, want the cached status itself")
	}
	if r.at == nil || !r.at.Equal(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)) {
		t.Errorf("report time = %v, want the managed fields' write time", r.at)
	}
}

// TestPrunedReportLeavesTheCachedStatusAlone: ContentClassifier pruning of a cached (shared)
// status copies what it changes.
func TestPrunedReportLeavesTheCachedStatusAlone(t *testing.T) {
	ws := wireWorkStatus(t, "wec-0001", "app-0001", 1, map[string]any{"replicas": 3, "secret": map[string]any{"token": "x"}})
	if _, err := trimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	p := classifier.NewPruner(&controlv1alpha1.ContentClassifier{Spec: controlv1alpha1.ContentClassifierSpec{
		DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "secret"}}}})
	if p == nil {
		t.Fatal("no pruner")
	}
	g := &gatherer{wecs: newWECIndex(), reports: newReportCache(), metrics: newMetrics(), log: logr.Discard()}
	g.wecs.update(nil, ws)
	in := &objectInputs{g: g, key: rules.WorkStatusObject(ws), pruner: p, prunerRV: "1"}
	if got, want := compactjson.Expand(in.reportedOnce(ws.Namespace).status), map[string]any{"replicas": int64(3)}; !reflect.DeepEqual(got, want) {
		t.Errorf("pruned report = %#v, want %#v", got, want)
	}
	if st, _ := workStatusStatus(ws); !reflect.DeepEqual(compactjson.Expand(st), map[string]any{"replicas": int64(3), "secret": map[string]any{"token": "x"}}) {
		t.Errorf("cached status after pruning = %#v, want it unchanged", st)
	}
	// A classifier that removes nothing from this status leaves the cached value as the report.
	other := classifier.NewPruner(&controlv1alpha1.ContentClassifier{Spec: controlv1alpha1.ContentClassifierSpec{
		DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "absent"}}}})
	in = &objectInputs{g: g, key: rules.WorkStatusObject(ws), pruner: other, prunerRV: "2"}
	if held, _ := workStatusStatus(ws); in.reportedOnce(ws.Namespace).status != held {
		t.Error("a classifier that removed nothing made a copy of the cached status")
	}
}

// BenchmarkCachedWorkStatusBytes reports the live heap (HeapAlloc after GC) per cached WorkStatus — the WorkStatus as
// the ITS cache holds it plus its decoded report (report cache, WEC index) — for 100 objects × 100
// WECs with a Deployment-shaped status, with the cache's transform ("decoded") and with only the
// managed fields trimmed ("raw": the raw status kept and decoded again for the report, as before
// the transform decoded it).
func BenchmarkCachedWorkStatusBytes(b *testing.B) {
	const wecs, objects = 100, 100
	for _, mode := range []string{"raw", "decoded"} {
		b.Run(mode, func(b *testing.B) {
			var perWS float64
			for b.Loop() {
				perWS = cachedBytesPerWorkStatus(b, mode == "decoded", wecs, objects)
			}
			b.ReportMetric(perWS, "B/WorkStatus")
		})
	}
}

func cachedBytesPerWorkStatus(b *testing.B, transform bool, wecs, objects int) float64 {
	g := &gatherer{wecs: newWECIndex(), reports: newReportCache(), clusterGen: &atomic.Uint64{}, metrics: newMetrics(), log: logr.Discard()}
	before := heapLive()
	held := make([]*controlv1alpha1.WorkStatus, 0, wecs*objects)
	for i := range wecs {
		for j := range objects {
			ws := wireWorkStatus(b, fmt.Sprintf("wec-%04d", i), fmt.Sprintf("app-%04d", j), i*objects+j, deploymentStatus(i*objects+j))
			if transform {
				_, _ = trimITSObject(ws)
			} else { // as before the transform decoded: the newest managed-fields entry kept for its time
				keepNewestManagedField(ws)
			}
			held = append(held, ws)
			g.wecs.update(nil, ws)
		}
	}
	for j := range objects {
		k := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "default", Name: fmt.Sprintf("app-%04d", j)}
		in := &objectInputs{g: g, key: k}
		for i := range wecs {
			if r := in.reportedOnce(fmt.Sprintf("wec-%04d", i)); r.status == nil {
				b.Fatalf("object %s, WEC %d: no report", k, i)
			}
		}
	}
	after := heapLive()
	runtime.KeepAlive(held)
	runtime.KeepAlive(g)
	if want := map[bool]int{false: wecs * objects, true: 0}[transform]; g.reports.len() != want {
		b.Fatalf("report cache holds %d entries, want %d (transformed WorkStatuses without a classifier: none)", g.reports.len(), want)
	}
	return float64(after-before) / float64(wecs*objects)
}

func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTrimITSObjectIsIdempotent: a WorkStatus transformed again (client-go may pass objects already
// in the cache to the transform) reads the same, and its shared maps are not written (-race: a
// reader of the cached object runs meanwhile).
func TestTrimITSObjectIsIdempotent(t *testing.T) {
	ws := wireWorkStatus(t, "wec-0001", "app-0001", 1, deploymentStatus(1))
	if _, err := trimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	want := ws.DeepCopy()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			for k, v := range ws.Labels {
				_, _ = k, v
			}
		}
	}()
	for range 100 {
		if _, err := trimITSObject(ws); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("after transforming again:\n got %+v\nwant %+v", ws, want)
	}
}

func TestStringTableIsBoundedAndShares(t *testing.T) {
	tab := newStringTable(2)
	dup := func(s string) string { return string([]byte(s)) } // an equal string, another copy
	a := tab.intern(dup("a"))
	if got := tab.intern(dup("a")); unsafe.StringData(got) != unsafe.StringData(a) {
		t.Errorf("interning an equal string gave another copy")
	}
	tab.intern(dup("b"))
	tab.intern(dup("c")) // full: starts afresh
	if n := len(tab.m); n > 2 {
		t.Errorf("table holds %d strings, want at most 2", n)
	}
	if got := tab.intern(dup("a")); got != "a" {
		t.Errorf("intern after a reset = %q, want %q", got, "a")
	}
	if got := tab.intern(""); got != "" {
		t.Errorf("intern of the empty string = %q", got)
	}
}

// BenchmarkTrimITSObject is the informer's cost per WorkStatus event of the transform (decoding
// and compacting a Deployment-shaped status), work that evaluations used to do instead.
func BenchmarkTrimITSObject(b *testing.B) {
	ws := wireWorkStatus(b, "wec-0001", "app-0001", 1, deploymentStatus(1))
	raw, managed := ws.Status.Raw, ws.ManagedFields
	for b.Loop() {
		ws.Status.Raw, ws.Status.Object, ws.ManagedFields = raw, nil, managed
		if _, err := trimITSObject(ws); err != nil {
			b.Fatal(err)
		}
	}
}

// keepNewestManagedField is what the ITS cache's transform did before it decoded the status: keep
// one managed-fields entry, the newest, for its time.
func keepNewestManagedField(ws *controlv1alpha1.WorkStatus) {
	var newest *metav1.Time
	for _, mf := range ws.ManagedFields {
		if mf.Time != nil && (newest == nil || mf.Time.After(newest.Time)) {
			newest = mf.Time
		}
	}
	ws.ManagedFields = nil
	if newest != nil {
		ws.ManagedFields = []metav1.ManagedFieldsEntry{{Time: newest}}
	}
}

// TestUnreadableStatusCountedOncePerWrite: a cached WorkStatus whose status is not JSON is logged
// and counted as unreadable once per write, however many evaluations re-read it.
func TestUnreadableStatusCountedOncePerWrite(t *testing.T) {
	ws := wireWorkStatus(t, "wec-0001", "app-0001", 1, nil)
	ws.Status.Raw = []byte(`{"a":`)
	if _, err := trimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	if !decodeFailed(ws) {
		t.Fatal("the transform decoded a status that is not JSON")
	}
	g := &gatherer{wecs: newWECIndex(), reports: newReportCache(), metrics: newMetrics(), log: logr.Discard()}
	g.wecs.update(nil, ws)
	for range 3 { // three evaluations
		in := &objectInputs{g: g, key: rules.WorkStatusObject(ws)}
		if r := in.reportedOnce(ws.Namespace); r.status != nil {
			t.Fatalf("report of an unreadable status = %#v, want nothing", r.status)
		}
	}
	var m dto.Metric
	if err := g.metrics.errors.WithLabelValues("workstatus").Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("unreadable WorkStatus counted %v times over three evaluations, want once", got)
	}
}

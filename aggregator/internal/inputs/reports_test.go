package inputs

import (
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// TestPrunedReportLeavesTheCachedStatusAlone: ContentClassifier pruning of a cached (shared)
// status copies what it changes.
func TestPrunedReportLeavesTheCachedStatusAlone(t *testing.T) {
	ws := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, map[string]any{"replicas": 3, "secret": map[string]any{"token": "x"}})
	if _, err := itscache.TrimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	p := classifier.NewPruner(&controlv1alpha1.ContentClassifier{Spec: controlv1alpha1.ContentClassifierSpec{
		DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "secret"}}}})
	if p == nil {
		t.Fatal("no pruner")
	}
	g := &Gatherer{wecs: itscache.NewWECIndex(), reports: NewReportCache(), metrics: metrics.New(), log: logr.Discard()}
	g.wecs.Update(nil, ws)
	in := &Object{g: g, Key: rules.WorkStatusObject(ws), pruner: p, prunerRV: "1"}
	if got, want := compactjson.Expand(in.ReportedOnce(ws.Namespace).Status), map[string]any{"replicas": int64(3)}; !reflect.DeepEqual(got, want) {
		t.Errorf("pruned report = %#v, want %#v", got, want)
	}
	if st, _ := itscache.WorkStatusStatus(ws); !reflect.DeepEqual(compactjson.Expand(st), map[string]any{"replicas": int64(3), "secret": map[string]any{"token": "x"}}) {
		t.Errorf("cached status after pruning = %#v, want it unchanged", st)
	}
	// A classifier that removes nothing from this status leaves the cached value as the report.
	other := classifier.NewPruner(&controlv1alpha1.ContentClassifier{Spec: controlv1alpha1.ContentClassifierSpec{
		DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "absent"}}}})
	in = &Object{g: g, Key: rules.WorkStatusObject(ws), pruner: other, prunerRV: "2"}
	if held, _ := itscache.WorkStatusStatus(ws); in.ReportedOnce(ws.Namespace).Status != held {
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
	g := &Gatherer{wecs: itscache.NewWECIndex(), reports: NewReportCache(), clusterGen: &atomic.Uint64{}, metrics: metrics.New(), log: logr.Discard()}
	before := heapLive()
	held := make([]*controlv1alpha1.WorkStatus, 0, wecs*objects)
	for i := range wecs {
		for j := range objects {
			ws := testutil.WireWorkStatus(b, fmt.Sprintf("wec-%04d", i), fmt.Sprintf("app-%04d", j), i*objects+j, testutil.DeploymentStatus(i*objects+j))
			if transform {
				_, _ = itscache.TrimITSObject(ws)
			} else { // as before the transform decoded: the newest managed-fields entry kept for its time
				keepNewestManagedField(ws)
			}
			held = append(held, ws)
			g.wecs.Update(nil, ws)
		}
	}
	for j := range objects {
		k := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "default", Name: fmt.Sprintf("app-%04d", j)}
		in := &Object{g: g, Key: k}
		for i := range wecs {
			if r := in.ReportedOnce(fmt.Sprintf("wec-%04d", i)); r.Status == nil {
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
	ws := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, nil)
	ws.Status.Raw = []byte(`{"a":`)
	if _, err := itscache.TrimITSObject(ws); err != nil {
		t.Fatal(err)
	}
	if !itscache.DecodeFailed(ws) {
		t.Fatal("the transform decoded a status that is not JSON")
	}
	g := &Gatherer{wecs: itscache.NewWECIndex(), reports: NewReportCache(), metrics: metrics.New(), log: logr.Discard()}
	g.wecs.Update(nil, ws)
	for range 3 { // three evaluations
		in := &Object{g: g, Key: rules.WorkStatusObject(ws)}
		if r := in.ReportedOnce(ws.Namespace); r.Status != nil {
			t.Fatalf("report of an unreadable status = %#v, want nothing", r.Status)
		}
	}
	var m dto.Metric
	if err := g.metrics.Errors.WithLabelValues("workstatus").Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("unreadable WorkStatus counted %v times over three evaluations, want once", got)
	}
}

// TestReportIsTheCachedStatus: the decoded value is what the report is: an evaluation reads it
// without decoding or copying.
func TestReportIsTheCachedStatus(t *testing.T) {
	a := testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1))
	if _, err := itscache.TrimITSObject(a); err != nil {
		t.Fatal(err)
	}
	heldA, _ := itscache.WorkStatusStatus(a)
	if _, ok := heldA.(*compactjson.Object); !ok {
		t.Fatalf("the cached status is a %T, want it compact", heldA)
	}
	g := &Gatherer{wecs: itscache.NewWECIndex(), reports: NewReportCache(), metrics: metrics.New(), log: logr.Discard()}
	g.wecs.Update(nil, a)
	in := &Object{g: g, Key: rules.WorkStatusObject(a)}
	r := in.ReportedOnce(a.Namespace)
	if r.Status != heldA {
		t.Errorf("the report is a copy of the cached status, want the cached status itself")
	}
	if r.At == nil || !r.At.Equal(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)) {
		t.Errorf("report time = %v, want the managed fields' write time", r.At)
	}
}

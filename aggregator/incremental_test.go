package aggregator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/objview"
)

// TestIncrementalFeedsMatchFromScratch drives the WEC index, the Tables and the returned-status
// State through random sequences of WorkStatus writes and deletions (also duplicate WorkStatuses
// in one mailbox), inventory label changes, destination changes, object spec and status-only
// changes, and evaluations that stop before feeding a consumer (as a failed write does). After
// every evaluation the incrementally fed Table and State must give what a from-scratch
// evaluation of the same inputs gives.
func TestIncrementalFeedsMatchFromScratch(t *testing.T) {
	compiler, err := collector.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	engine, err := aggregation.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	var cols []*collector.Collector
	for i, spec := range []controlv1alpha1.StatusCollectorSpec{
		{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
		{GroupBy: []controlv1alpha1.NamedExpression{{Name: "region", Def: "inventory.labels.region"}, {Name: "ready", Def: "returned.status.readyReplicas"}},
			CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
		{Filter: ptr("returned.status.readyReplicas < obj.spec.replicas"),
			Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}, {Name: "ready", Def: "returned.status.readyReplicas"}}},
	} {
		sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}, Spec: spec}
		col, errs, _ := compiler.Compile(sc)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		cols = append(cols, col)
	}
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	key := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "app"}

	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		labels := map[string]map[string]string{}
		g := &gatherer{wecs: itscache.NewWECIndex(), reports: newReportCache(), clusterGen: &atomic.Uint64{}, metrics: metrics.New(), log: logr.Discard(),
			inventoryLabels: func(wec string) (map[string]string, bool) {
				l, ok := labels[wec]
				return l, ok
			}}
		tables, destsOf := newTableStore(), newDestsCache()
		returns := &statusReturner{engine: engine, states: newReturnStates()}
		wecNames := []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}
		rv := 0
		nextRV := func() string { rv++; return strconv.Itoa(rv) }
		workStatuses := map[string]*controlv1alpha1.WorkStatus{} // namespace/name → current
		rawOf := map[*controlv1alpha1.WorkStatus][]byte{}        // the status as written
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "app", "namespace": "ns", "generation": int64(1), "uid": "u1"},
			"spec":     map[string]any{"replicas": int64(3)},
		}}
		obj.SetResourceVersion(nextRV())
		binding := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "b1", ResourceVersion: nextRV()}}
		setDests := func() {
			binding = binding.DeepCopy()
			binding.Spec.Destinations = nil
			for _, w := range wecNames {
				if rng.IntN(4) > 0 {
					binding.Spec.Destinations = append(binding.Spec.Destinations, controlv1alpha1.Destination{ClusterId: w})
				}
			}
			binding.ResourceVersion = nextRV()
		}
		setDests()

		for step := 0; step < 150; step++ {
			for range 1 + rng.IntN(4) {
				w := wecNames[rng.IntN(len(wecNames))]
				name := "ws"
				if rng.IntN(5) == 0 {
					name = "ws-dup" // a second WorkStatus for the object in the same mailbox
				}
				id := w + "/" + name
				switch op := rng.IntN(10); {
				case op < 6:
					ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: w, Name: name,
						UID: types.UID(id), ResourceVersion: nextRV(), CreationTimestamp: metav1.NewTime(time.Unix(int64(len(name)), 0))}}
					ws.Spec.SourceRef = controlv1alpha1.SourceRef{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "app"}
					st, _ := json.Marshal(map[string]any{"readyReplicas": rng.IntN(4), "replicas": 3, "observedGeneration": 1})
					ws.Status.RawExtension = runtime.RawExtension{Raw: st}
					rawOf[ws] = st
					if rng.IntN(2) == 0 { // as the ITS cache holds it: decoded once, raw JSON dropped
						_, _ = itscache.TrimITSObject(ws)
					}
					ws.StatusDetails = controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true}
					old := workStatuses[id]
					workStatuses[id] = ws
					g.wecs.Update(old, ws)
				case op < 8:
					if old := workStatuses[id]; old != nil {
						delete(workStatuses, id)
						g.wecs.Update(old, nil)
						g.reports.forget(old.UID)
					}
				case op == 8:
					labels[w] = map[string]string{"region": fmt.Sprintf("r%d", rng.IntN(3))}
					g.clusterGen.Add(1)
				default:
					delete(labels, w)
					g.clusterGen.Add(1)
				}
			}
			switch rng.IntN(12) {
			case 0:
				setDests()
			case 1: // a spec change
				obj = obj.DeepCopy()
				_ = unstructured.SetNestedField(obj.Object, int64(1+rng.IntN(4)), "spec", "replicas")
				obj.SetGeneration(obj.GetGeneration() + 1)
				obj.SetResourceVersion(nextRV())
			case 2: // a status-only write, as statusfold's own return
				obj = obj.DeepCopy()
				obj.Object["status"] = map[string]any{"readyReplicas": int64(rng.IntN(4))}
				obj.SetResourceVersion(nextRV())
			}

			in := &objectInputs{g: g, key: key, obj: obj, clusterGen: g.clusterGen.Load()}
			in.changed, in.prevEpoch, in.epoch = g.wecs.Take(key)
			dests := destsOf.of(binding)
			if rng.IntN(6) > 0 { // else: the evaluation stopped before feeding the Table
				ts := tables.get(pairKey{Object: key, Policy: "p"}, cols)
				ts.feed(in, cols, dests)
				var scratch []collector.WEC
				for _, d := range dests {
					w := collector.WEC{Name: d, Labels: labels[d]}
					if ws := newest(workStatuses, d); ws != nil {
						var st any
						_ = json.Unmarshal(rawOf[ws], &st)
						at := itscache.LastWrite(ws)
						w.Status, w.LastUpdate = st, &at
					}
					scratch = append(scratch, w)
				}
				want := collector.Evaluate(objview.Of(obj.Object), scratch, cols)
				if got := ts.table.Results(); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d: incremental Table\n got %+v\nwant %+v", seed, step, got, want)
				}
			}
			if rng.IntN(6) > 0 {
				in.info = resources.ResourceInfo{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}
				got, err := returns.computeReturn(in, dests)
				if err != nil {
					t.Fatal(err)
				}
				var scratch []aggregation.WEC
				for _, d := range dests {
					w := aggregation.WEC{Name: d}
					if ws := newest(workStatuses, d); ws != nil {
						_ = json.Unmarshal(rawOf[ws], &w.Status)
						w.Details = ws.StatusDetails.DeepCopy()
					}
					scratch = append(scratch, w)
				}
				want, err := engine.Returned(gk, objview.Of(obj.Object), scratch)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d: incremental returned status\n got %v\nwant %v", seed, step, got, want)
				}
			}
		}
	}
}

// newest is the WorkStatus of wec that the index must pick: the newest by creation, then by name.
func newest(all map[string]*controlv1alpha1.WorkStatus, wec string) *controlv1alpha1.WorkStatus {
	var best *controlv1alpha1.WorkStatus
	for _, id := range slices.Sorted(mapsKeys(all)) {
		ws := all[id]
		if ws.Namespace != wec {
			continue
		}
		if best == nil || ws.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(ws.CreationTimestamp.Equal(&best.CreationTimestamp) && ws.Name > best.Name) {
			best = ws
		}
	}
	return best
}

func ptr(s string) *controlv1alpha1.Expression {
	e := controlv1alpha1.Expression(s)
	return &e
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

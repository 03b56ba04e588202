package inputstest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Key is the workload object the sequences are about.
var Key = rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "app"}

// Seeds and Steps: how many random sequences Run drives, and how many evaluations each has.
const (
	Seeds = 20
	Steps = 150
)

var wecNames = []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}

// Step is one evaluation of a sequence: its inputs and what a from-scratch evaluation reads.
type Step struct {
	Seed  uint64
	Index int
	// Rand is the sequence's source, for the consumer's own choices (e.g. an evaluation that
	// stops before feeding it, as a failed write does).
	Rand *rand.Rand
	// In are the evaluation's inputs; Dests the Binding's destinations (sorted); Obj the object.
	In    *inputs.Object
	Dests []string
	Obj   *unstructured.Unstructured
	seq   *sequence
}

// Labels are the inventory labels of wec (nil: no inventory object).
func (s *Step) Labels(wec string) map[string]string { return s.seq.labels[wec] }

// Newest is the WorkStatus of wec that counts: the newest by creation, then by name (nil: none).
func (s *Step) Newest(wec string) *controlv1alpha1.WorkStatus {
	var best *controlv1alpha1.WorkStatus
	for _, ws := range s.seq.workStatuses {
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

// Raw is the status of ws as written.
func (s *Step) Raw(ws *controlv1alpha1.WorkStatus) []byte { return s.seq.rawOf[ws] }

// Run drives Seeds sequences of Steps evaluations of Key. For each sequence it asks newConsumer
// for a consumer with fresh state, and hands it every evaluation.
func Run(t *testing.T, newConsumer func() func(*Step)) {
	t.Helper()
	for seed := uint64(1); seed <= Seeds; seed++ {
		q := newSequence(seed)
		consume := newConsumer()
		for step := range Steps {
			q.changeWorkStatuses()
			q.changeObject()
			in := q.g.Begin(Key)
			in.Obj = q.obj
			consume(&Step{Seed: seed, Index: step, Rand: q.rng, In: in, Dests: q.dests.Of(q.binding), Obj: q.obj, seq: q})
		}
	}
}

// sequence is the state of one random sequence.
type sequence struct {
	rng          *rand.Rand
	g            *inputs.Gatherer
	wecs         *itscache.WECIndex
	reports      *inputs.ReportCache
	clusterGen   *atomic.Uint64
	dests        *inputs.DestsCache
	labels       map[string]map[string]string
	rv           int
	workStatuses map[string]*controlv1alpha1.WorkStatus // namespace/name → current
	rawOf        map[*controlv1alpha1.WorkStatus][]byte // the status as written
	obj          *unstructured.Unstructured
	binding      *controlv1alpha1.Binding
}

func newSequence(seed uint64) *sequence {
	q := &sequence{rng: rand.New(rand.NewPCG(seed, 7)), wecs: itscache.NewWECIndex(), reports: inputs.NewReportCache(),
		clusterGen: &atomic.Uint64{}, dests: inputs.NewDestsCache(), labels: map[string]map[string]string{},
		workStatuses: map[string]*controlv1alpha1.WorkStatus{}, rawOf: map[*controlv1alpha1.WorkStatus][]byte{}}
	q.g = inputs.New(inputs.Config{WECs: q.wecs, Reports: q.reports, ClusterGen: q.clusterGen, Metrics: metrics.New(), Log: logr.Discard(),
		InventoryLabels: func(wec string) (map[string]string, bool) {
			l, ok := q.labels[wec]
			return l, ok
		}})
	q.obj = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "app", "namespace": "ns", "generation": int64(1), "uid": "u1"},
		"spec":     map[string]any{"replicas": int64(3)},
	}}
	q.obj.SetResourceVersion(q.nextRV())
	q.binding = &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "b1", ResourceVersion: q.nextRV()}}
	q.setDests()
	return q
}

func (q *sequence) nextRV() string { q.rv++; return strconv.Itoa(q.rv) }

func (q *sequence) setDests() {
	q.binding = q.binding.DeepCopy()
	q.binding.Spec.Destinations = nil
	for _, w := range wecNames {
		if q.rng.IntN(4) > 0 {
			q.binding.Spec.Destinations = append(q.binding.Spec.Destinations, controlv1alpha1.Destination{ClusterId: w})
		}
	}
	q.binding.ResourceVersion = q.nextRV()
}

// changeWorkStatuses makes one to four changes: WorkStatus writes and deletions, inventory label
// changes.
func (q *sequence) changeWorkStatuses() {
	for range 1 + q.rng.IntN(4) {
		w := wecNames[q.rng.IntN(len(wecNames))]
		name := "ws"
		if q.rng.IntN(5) == 0 {
			name = "ws-dup" // a second WorkStatus for the object in the same mailbox
		}
		id := w + "/" + name
		switch op := q.rng.IntN(10); {
		case op < 6:
			q.writeWorkStatus(w, name, id)
		case op < 8:
			if old := q.workStatuses[id]; old != nil {
				delete(q.workStatuses, id)
				q.wecs.Update(old, nil)
				q.reports.Forget(old.UID)
			}
		case op == 8:
			q.labels[w] = map[string]string{"region": fmt.Sprintf("r%d", q.rng.IntN(3))}
			q.clusterGen.Add(1)
		default:
			delete(q.labels, w)
			q.clusterGen.Add(1)
		}
	}
}

func (q *sequence) writeWorkStatus(w, name, id string) {
	ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: w, Name: name,
		UID: types.UID(id), ResourceVersion: q.nextRV(), CreationTimestamp: metav1.NewTime(time.Unix(int64(len(name)), 0))}}
	ws.Spec.SourceRef = controlv1alpha1.SourceRef{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "app"}
	st, _ := json.Marshal(map[string]any{"readyReplicas": q.rng.IntN(4), "replicas": 3, "observedGeneration": 1})
	ws.Status.RawExtension = runtime.RawExtension{Raw: st}
	q.rawOf[ws] = st
	if q.rng.IntN(2) == 0 { // as the ITS cache holds it: decoded once, raw JSON dropped
		_, _ = itscache.TrimITSObject(ws)
	}
	ws.StatusDetails = controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true}
	old := q.workStatuses[id]
	q.workStatuses[id] = ws
	q.wecs.Update(old, ws)
}

// changeObject changes, at times, the destinations, the object's spec or its status alone.
func (q *sequence) changeObject() {
	switch q.rng.IntN(12) {
	case 0:
		q.setDests()
	case 1: // a spec change
		q.obj = q.obj.DeepCopy()
		_ = unstructured.SetNestedField(q.obj.Object, int64(1+q.rng.IntN(4)), "spec", "replicas")
		q.obj.SetGeneration(q.obj.GetGeneration() + 1)
		q.obj.SetResourceVersion(q.nextRV())
	case 2: // a status-only write, as statusfold's own return
		q.obj = q.obj.DeepCopy()
		q.obj.Object["status"] = map[string]any{"readyReplicas": int64(q.rng.IntN(4))}
		q.obj.SetResourceVersion(q.nextRV())
	}
}

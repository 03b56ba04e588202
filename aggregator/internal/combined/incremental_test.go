package combined

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statusfold/statusfold/aggregator/internal/inputs/inputstest"
	"github.com/statusfold/statusfold/aggregator/internal/itscache"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/objview"
)

// incrementalCollectors are the collectors of TestIncrementalTableMatchesFromScratch: a count, a
// group by inventory label and reported field, a filtered select.
var incrementalCollectors = []controlv1alpha1.StatusCollectorSpec{
	{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
	{GroupBy: []controlv1alpha1.NamedExpression{{Name: "region", Def: "inventory.labels.region"}, {Name: "ready", Def: "returned.status.readyReplicas"}},
		CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: controlv1alpha1.AggregatorTypeCount}}},
	{Filter: ptr("returned.status.readyReplicas < obj.spec.replicas"),
		Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}, {Name: "ready", Def: "returned.status.readyReplicas"}}},
}

// TestIncrementalTableMatchesFromScratch drives the WEC index and a pair's Table through random
// sequences of input changes (inputstest), with evaluations that stop before feeding the Table
// (as a failed write does). After every evaluation the incrementally fed Table must give what a
// from-scratch evaluation of the same inputs gives.
func TestIncrementalTableMatchesFromScratch(t *testing.T) {
	compiler, err := collector.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	var cols []*collector.Collector
	for i, spec := range incrementalCollectors {
		sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}, Spec: spec}
		col, errs, _ := compiler.Compile(sc)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		cols = append(cols, col)
	}
	inputstest.Run(t, func() func(*inputstest.Step) {
		tables := newTableStore()
		return func(s *inputstest.Step) {
			if s.Rand.IntN(6) == 0 {
				return // the evaluation stopped before feeding the Table
			}
			ts := tables.get(pairKey{Object: inputstest.Key, Policy: "p"}, cols)
			ts.feed(s.In, cols, s.Dests)
			var scratch []collector.WEC
			for _, d := range s.Dests {
				w := collector.WEC{Name: d, Labels: s.Labels(d)}
				if ws := s.Newest(d); ws != nil {
					var st any
					_ = json.Unmarshal(s.Raw(ws), &st)
					at := itscache.LastWrite(ws)
					w.Status, w.LastUpdate = st, &at
				}
				scratch = append(scratch, w)
			}
			want := collector.Evaluate(objview.Of(s.Obj.Object), scratch, cols)
			if got := ts.table.Results(); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: incremental Table\n got %+v\nwant %+v", s.Seed, s.Index, got, want)
			}
		}
	})
}

func ptr(s string) *controlv1alpha1.Expression {
	e := controlv1alpha1.Expression(s)
	return &e
}

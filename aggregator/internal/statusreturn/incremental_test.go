package statusreturn

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/inputs/inputstest"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/objview"
)

// TestIncrementalReturnMatchesFromScratch drives the WEC index and an object's returned-status
// State through random sequences of input changes (inputstest), with evaluations that stop
// before feeding the State (as a failed write does). After every evaluation the incrementally fed
// State must give what a from-scratch evaluation of the same inputs gives.
func TestIncrementalReturnMatchesFromScratch(t *testing.T) {
	engine, err := aggregation.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	info := resources.ResourceInfo{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}
	inputstest.Run(t, func() func(*inputstest.Step) {
		returns := &Returner{engine: engine, states: newReturnStates()}
		return func(s *inputstest.Step) {
			if s.Rand.IntN(6) == 0 {
				return // the evaluation stopped before feeding the State
			}
			s.In.Info = info
			got, err := returns.computeReturn(s.In, s.Dests)
			if err != nil {
				t.Fatal(err)
			}
			var scratch []aggregation.WEC
			for _, d := range s.Dests {
				w := aggregation.WEC{Name: d}
				if ws := s.Newest(d); ws != nil {
					_ = json.Unmarshal(s.Raw(ws), &w.Status)
					w.Details = ws.StatusDetails.DeepCopy()
				}
				scratch = append(scratch, w)
			}
			want, err := engine.Returned(gk, objview.Of(s.Obj.Object), scratch)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: incremental returned status\n got %v\nwant %v", s.Seed, s.Index, got, want)
			}
		}
	})
}

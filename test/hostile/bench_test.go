package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
)

// BenchmarkCostBomb measures how long one evaluation of an expression that passes the static
// cost estimate runs before the runtime cost limit (1,000,000) stops it, for reported lists of
// growing size: the time a hostile collector costs per (object, WEC).
func BenchmarkCostBomb(b *testing.B) {
	c, err := collector.NewCompiler()
	if err != nil {
		b.Fatal(err)
	}
	subject := controlv1alpha1.Expression("returned.status.items.map(x, returned.status.items.filter(y, y < 2).size()).size()")
	sc := &controlv1alpha1.StatusCollector{}
	sc.Name = "bomb"
	sc.Spec.CombinedFields = []controlv1alpha1.NamedAggregator{{Name: "s", Type: controlv1alpha1.AggregatorTypeSum, Subject: &subject}}
	col, errs, _ := c.Compile(sc)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	for _, n := range []int{100, 300, 1000} {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		var status any
		if err := json.Unmarshal([]byte(`{"items":[`+strings.Join(items, ",")+`]}`), &status); err != nil {
			b.Fatal(err)
		}
		wecs := []collector.WEC{{Name: "w1", Status: status}}
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			for b.Loop() {
				collector.Evaluate(nil, wecs, []*collector.Collector{col})
			}
		})
	}
}

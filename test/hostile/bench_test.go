package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
)

// BenchmarkCostBomb measures an expression that passes the static cost estimate but meets large
// reported lists. items=N: one evaluation for one WEC until the runtime cost limit (1,000,000)
// stops it, without a time budget. object/wecs=W: one evaluation of an object with W such WECs,
// with the product's default time budget — what a hostile collector costs a manager worker.
func BenchmarkCostBomb(b *testing.B) {
	subject := controlv1alpha1.Expression("returned.status.items.map(x, returned.status.items.filter(y, y < 2).size()).size()")
	sc := &controlv1alpha1.StatusCollector{}
	sc.Name = "bomb"
	sc.Spec.CombinedFields = []controlv1alpha1.NamedAggregator{{Name: "s", Type: controlv1alpha1.AggregatorTypeSum, Subject: &subject}}
	compile := func(opts ...collector.CompilerOption) *collector.Collector {
		c, err := collector.NewCompiler(opts...)
		if err != nil {
			b.Fatal(err)
		}
		col, errs, _ := c.Compile(sc)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		return col
	}
	unbudgeted := compile(collector.WithTimeBudget(time.Hour))
	product := compile()
	status := func(n int) any {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		var status any
		if err := json.Unmarshal([]byte(`{"items":[`+strings.Join(items, ",")+`]}`), &status); err != nil {
			b.Fatal(err)
		}
		return status
	}
	for _, n := range []int{100, 300, 1000} {
		wecs := []collector.WEC{{Name: "w1", Status: status(n)}}
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			for b.Loop() {
				collector.Evaluate(nil, wecs, []*collector.Collector{unbudgeted})
			}
		})
	}
	big := status(1000)
	for _, w := range []int{10, 100} {
		wecs := make([]collector.WEC, w)
		for i := range wecs {
			wecs[i] = collector.WEC{Name: fmt.Sprintf("w%03d", i), Status: big}
		}
		b.Run(fmt.Sprintf("object/wecs=%d/items=1000", w), func(b *testing.B) {
			for b.Loop() {
				collector.Evaluate(nil, wecs, []*collector.Collector{product})
			}
		})
	}
}

package kscompat

import (
	"fmt"
	"strconv"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// The differential corpus: corpusCollectors × corpusObjects cases (one result of one
// CombinedStatus each), over five WECs. Every case is one StatusCollector evaluated over the
// WorkStatuses of one object; the objects differ in which WECs reported and what.

const corpusNamespace = "corpus"

// corpusWECs are the WECs, in name order, with their inventory labels.
var corpusWECs = []struct {
	name, region string
}{{"c1", "eu"}, {"c2", "us"}, {"c3", "eu"}, {"c4", "ap"}, {"c5", "us"}}

const (
	aggSum = ksv1alpha1.AggregatorTypeSum
	aggAvg = ksv1alpha1.AggregatorTypeAvg
	aggMin = ksv1alpha1.AggregatorTypeMin
	aggMax = ksv1alpha1.AggregatorTypeMax
)

// corpusCollectors cover select, filter, groupBy, every aggregate, failing expressions, object and
// list values, timestamps and limit. Every one is valid for both controllers.
func corpusCollectors() []*ksv1alpha1.StatusCollector {
	return []*ksv1alpha1.StatusCollector{
		statusCollector("s-wec", sel("wec", "inventory.name")),
		statusCollector("s-int", sel("avail", "returned.status.avail")),
		statusCollector("s-two", sel("phase", "returned.status.phase"), sel("replicas", "returned.status.replicas")),
		statusCollector("s-object", sel("info", "returned.status.info")),
		statusCollector("s-list", sel("tags", "returned.status.tags")),
		statusCollector("s-conds", sel("conds", "returned.status.conds")),
		statusCollector("s-time", sel("t", "propagation.lastReturnedUpdateTimestamp")),
		statusCollector("s-obj", sel("n", "obj.metadata.name"), sel("tier", "obj.data.tier")),
		statusCollector("s-filter", filter("returned.status.phase == 'Running'"), sel("wec2", "inventory.name")),
		statusCollector("s-flag", filter("returned.status.flag"), sel("wec3", "inventory.name")),
		statusCollector("s-limit", sel("wec4", "inventory.name"), limit(2)),
		statusCollector("s-fail", sel("deep", "returned.status.nosuch.deep")),
		statusCollector("s-arith", sel("diff", "returned.status.replicas - returned.status.ready")),
		statusCollector("s-double", sel("ratio", "returned.status.ratio")),
		statusCollector("s-bool", sel("same", "returned.status.replicas == returned.status.ready")),
		statusCollector("s-status", sel("whole", "returned.status")),
		statusCollector("a-count", count("n")),
		statusCollector("a-sum", agg("sum", aggSum, "returned.status.avail")),
		statusCollector("a-avg", agg("avg", aggAvg, "returned.status.avail")),
		statusCollector("a-min", agg("min", aggMin, "returned.status.avail")),
		statusCollector("a-max", agg("max", aggMax, "returned.status.avail")),
		statusCollector("a-all", count("n2"), agg("replicas", aggSum, "returned.status.replicas"),
			agg("ratio2", aggAvg, "returned.status.ratio"), agg("lo", aggMin, "returned.status.ready"),
			agg("hi", aggMax, "returned.status.ready")),
		statusCollector("a-by-phase", groupBy("phase2", "returned.status.phase"), count("n3"),
			agg("sum2", aggSum, "returned.status.avail")),
		statusCollector("a-by-ready", groupBy("ready", "returned.status.ready"), count("n4")),
		statusCollector("a-by-object", groupBy("info2", "returned.status.info"), count("n5")),
		statusCollector("a-by-list", groupBy("tags2", "returned.status.tags"), count("n6")),
		statusCollector("a-by-bool", groupBy("ok", "returned.status.ready == returned.status.replicas"), count("n7")),
		statusCollector("a-strings", agg("sum3", aggSum, "returned.status.countStr"), agg("max2", aggMax, "returned.status.countStr")),
		statusCollector("a-bad", agg("sum4", aggSum, "returned.status.bad")),
		statusCollector("a-filter", filter("returned.status.phase == 'Running'"), count("n8"),
			agg("sum5", aggSum, "returned.status.ready")),
		statusCollector("a-filter-fail", filter("returned.status.nosuch > 1"), count("n9")),
		statusCollector("a-group-fail", groupBy("g", "returned.status.nosuch"), count("n10")),
		statusCollector("a-limit", groupBy("ready2", "returned.status.ready"), count("n11"), limit(1)),
		statusCollector("a-double", agg("sum6", aggSum, "returned.status.ratio"), agg("min2", aggMin, "returned.status.ratio")),
		statusCollector("a-by-name", groupBy("name", "obj.metadata.name"), count("n12"),
			agg("avg2", aggAvg, "returned.status.replicas")),
		statusCollector("a-none", filter("returned.status.replicas > 100"), count("n13"),
			agg("sum7", aggSum, "returned.status.replicas"), agg("avg3", aggAvg, "returned.status.replicas"),
			agg("min3", aggMin, "returned.status.replicas"), agg("max3", aggMax, "returned.status.replicas")),
	}
}

// baseStatus is WEC i's reported state before an object's variations.
func baseStatus(i int) map[string]any {
	flags := []any{true, false, nil, "yes", true}
	phases := []string{"Running", "Pending", "Running", "Failed", "Running"}
	region := corpusWECs[i].region
	condStatus := "True"
	if i%2 == 1 {
		condStatus = "False"
	}
	return map[string]any{
		"replicas": int64(3),
		"ready":    int64(i % 4),
		"avail":    int64(i % 4),
		"phase":    phases[i],
		"ratio":    0.25 + 0.5*float64(i),
		"countStr": strconv.Itoa(i + 1),
		"bad":      fmt.Sprintf("x%d", i),
		"flag":     flags[i],
		"info":     map[string]any{"zone": region, "n": int64(i % 2)},
		"tags":     []any{region, fmt.Sprintf("t%d", i%2)},
		"conds":    []any{map[string]any{"type": "Available", "status": condStatus}},
	}
}

// corpusObject is one workload object (a ConfigMap) and what each WEC reported about it: a WEC
// missing from reports has no WorkStatus; a nil map is a WorkStatus without .status.
type corpusObject struct {
	name    string
	tier    string
	reports map[string]map[string]any
}

func corpusObjects() []corpusObject {
	all := func(edit func(i int, st map[string]any)) map[string]map[string]any {
		out := map[string]map[string]any{}
		for i, w := range corpusWECs {
			st := baseStatus(i)
			if edit != nil {
				edit(i, st)
			}
			out[w.name] = st
		}
		return out
	}
	partial := all(nil)
	delete(partial, "c4")
	delete(partial, "c5")
	nullish := all(func(i int, st map[string]any) {
		switch i {
		case 0:
			st["avail"], st["ratio"] = nil, nil
		case 2:
			st["info"], st["tags"] = nil, nil
		}
	})
	nullish["c5"] = map[string]any{}
	nullish["c4"] = nil
	return []corpusObject{
		{name: "o-full", tier: "gold", reports: all(nil)},
		{name: "o-partial", tier: "silver", reports: partial},
		{name: "o-missing", tier: "gold", reports: all(func(i int, st map[string]any) {
			switch i {
			case 1, 3:
				delete(st, "avail")
			case 2:
				delete(st, "ratio")
			}
		})},
		{name: "o-strings", tier: "bronze", reports: all(func(i int, st map[string]any) {
			st["countStr"] = []string{"4", "-2.5e3", "0.5", "seven", "1e2"}[i]
			st["phase"] = []string{"Running", "Running", "Pending", "Pending", "Running"}[i]
		})},
		{name: "o-none", tier: "gold", reports: map[string]map[string]any{}},
		{name: "o-nullish", tier: "silver", reports: nullish},
		{name: "o-mixed", tier: "gold", reports: all(func(i int, st map[string]any) {
			switch i {
			case 0:
				st["avail"] = 2.5
			case 1:
				st["avail"] = "3"
			case 2:
				st["ready"] = int64(3)
			}
		})},
	}
}

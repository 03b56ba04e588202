package aggregation

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// The baselines the benchmarks compare the engine with (BenchmarkGoReference, BenchmarkNaive): a
// hand-written Go Deployment aggregator and a naive Rego one, both applying the rules of
// modules/deployment.rego.

// goReferenceDeployment is a hand-written Go Deployment aggregator applying the same rules as
// modules/deployment.rego: counts min/max (missing = 0), conditions by type (positive, ReplicaFailure
// negative) with the newest agreeing entry, observedGeneration mapped to the WDS generation.
func goReferenceDeployment(obj map[string]any, wecs []WEC) map[string]any {
	gen := objectGeneration(obj)
	out := map[string]any{}
	counts := []refCount{{name: "replicas", isMax: true}, {name: "updatedReplicas"}, {name: "readyReplicas"}, {name: "availableReplicas"},
		{name: "unavailableReplicas", isMax: true}, {name: "terminatingReplicas", isMax: true}}
	var conds []*refCond
	allCurrent, obsSeen := true, false
	for j, w := range wecs {
		st := w.Status
		for k := range counts {
			counts[k].add(j, st)
		}
		if _, ok := st["observedGeneration"].(int64); ok {
			obsSeen = true
		}
		if !isCurrent(w.Details, st, gen) {
			allCurrent = false
		}
		list, _ := st["conditions"].([]any)
		for _, x := range list {
			m := x.(map[string]any)
			typ, _ := m["type"].(string)
			var ca *refCond
			conds, ca = refCondOf(conds, typ)
			ca.add(m)
		}
	}
	for _, c := range counts {
		if c.seen {
			out[c.name] = c.v
		}
	}
	if obsSeen {
		out["observedGeneration"] = returnedGeneration(gen, allCurrent)
	}
	if len(conds) > 0 {
		list := make([]any, 0, len(conds))
		for _, c := range conds {
			list = append(list, c.entry(len(wecs)))
		}
		out["conditions"] = list
	}
	return out
}

// refCount is goReferenceDeployment's running minimum (or, with isMax, maximum) of one count.
type refCount struct {
	name  string
	isMax bool
	v     int64
	seen  bool
}

// add takes in the count of WEC j, whose status is st (a missing count is 0).
func (c *refCount) add(j int, st map[string]any) {
	x, ok := st[c.name].(int64)
	if ok {
		c.seen = true
	}
	if j == 0 || (c.isMax && x > c.v) || (!c.isMax && x < c.v) {
		c.v = x
	}
}

// refCond is goReferenceDeployment's running combination of one condition type: entries by
// status, and the newest entry of each status with its lastTransitionTime.
type refCond struct {
	typ                     string
	nTrue, nFalse, nOther   int
	present                 int
	latest                  string
	bestTrue, bestFalse, bo map[string]any
	ltTrue, ltFalse, ltO    string
}

// refCondOf returns the entry of type typ in conds, appending a new one when there is none.
func refCondOf(conds []*refCond, typ string) ([]*refCond, *refCond) {
	var ca *refCond
	for _, c := range conds {
		if c.typ == typ {
			ca = c
		}
	}
	if ca == nil {
		ca = &refCond{typ: typ}
		conds = append(conds, ca)
	}
	return conds, ca
}

// add takes in one WEC's entry m of the type.
func (ca *refCond) add(m map[string]any) {
	ca.present++
	s, _ := m["status"].(string)
	lt, _ := m["lastTransitionTime"].(string)
	ca.latest = max(ca.latest, lt)
	switch s {
	case "True":
		ca.nTrue++
		if ca.bestTrue == nil || lt > ca.ltTrue {
			ca.bestTrue, ca.ltTrue = m, lt
		}
	case "False":
		ca.nFalse++
		if ca.bestFalse == nil || lt > ca.ltFalse {
			ca.bestFalse, ca.ltFalse = m, lt
		}
	default:
		ca.nOther++
		if ca.bo == nil || lt > ca.ltO {
			ca.bo, ca.ltO = m, lt
		}
	}
}

// entry is the combined entry of the type over n WECs: ReplicaFailure negative, every other type
// positive.
func (c *refCond) entry(n int) map[string]any {
	missing := n - c.present
	var status string
	var chosen map[string]any
	if c.typ == "ReplicaFailure" {
		switch {
		case c.nTrue > 0:
			status, chosen = "True", c.bestTrue
		case c.nOther == 0:
			status, chosen = "False", c.bestFalse
		default:
			status, chosen = "Unknown", c.bo
		}
	} else {
		switch {
		case c.nFalse > 0:
			status, chosen = "False", c.bestFalse
		case c.nOther == 0 && missing == 0:
			status, chosen = "True", c.bestTrue
		default:
			status, chosen = "Unknown", c.bo
		}
	}
	e := map[string]any{}
	if chosen != nil {
		for k, v := range chosen {
			e[k] = v
		}
	} else {
		e["type"], e["reason"], e["message"] = c.typ, "Incomplete", "not every WEC reports this condition"
	}
	e["status"], e["lastTransitionTime"] = status, c.latest
	return e
}

// naiveModule is the straightforward Rego Deployment aggregator: every rule iterates over every WEC.
const naiveModule = `package naive.deployment

wds_generation := object.get(input.object, ["metadata", "generation"], 0)

count_of(w, f) := n if { n := w.status[f]; is_number(n) } else := 0

reported(f) if { some w in input.wecs; is_number(w.status[f]) }

mins := {f: min([count_of(w, f) | some w in input.wecs]) | some f in ["updatedReplicas", "readyReplicas", "availableReplicas"]; reported(f)}

maxs := {f: max([count_of(w, f) | some w in input.wecs]) | some f in ["replicas", "unavailableReplicas", "terminatingReplicas"]; reported(f)}

current(w) if {
	is_object(w.status)
	w.statusDetails.lastGeneration >= wds_generation
	w.statusDetails.lastGenerationIsApplied
	not status_behind(w)
}

status_behind(w) if {
	g := w.statusDetails.wecGeneration
	not w.status.observedGeneration >= g
}

all_current if {
	every w in input.wecs {
		current(w)
	}
}

observed := wds_generation if all_current else := wds_generation - 1

generation := {"observedGeneration": observed} if {
	some w in input.wecs
	is_number(w.status.observedGeneration)
} else := {}

entries(t) := [c | some w in input.wecs; some c in object.get(w.status, "conditions", []); c.type == t]

combined(t, es) := "True" if { t == "ReplicaFailure"; some c in es; c.status == "True" }
	else := "False" if { t == "ReplicaFailure"; every c in es { c.status == "False" } }
	else := "False" if { t != "ReplicaFailure"; some c in es; c.status == "False" }
	else := "True" if { t != "ReplicaFailure"; count(es) == count(input.wecs); every c in es { c.status == "True" } }
	else := "Unknown"

condition(t) := object.union(chosen, {"status": s, "lastTransitionTime": max({c.lastTransitionTime | some c in es})}) if {
	es := entries(t)
	s := combined(t, es)
	agree := [c | some c in es; c.status == s]
	newest := max({c.lastTransitionTime | some c in agree})
	chosen := [c | some c in agree; c.lastTransitionTime == newest][0]
} else := {"type": t, "status": combined(t, entries(t)), "reason": "Incomplete", "message": "not every WEC reports this condition", "lastTransitionTime": max({c.lastTransitionTime | some c in entries(t)})}

type_set := {c.type | some w in input.wecs; some c in object.get(w.status, "conditions", [])}

first_seen(t) := min({[i, k] | some i, w in input.wecs; some k, c in object.get(w.status, "conditions", []); c.type == t})

types := [p[1] | some p in sort([[first_seen(t), t] | some t in type_set])]

conditions := {"conditions": [condition(t) | some t in types]} if count(types) > 0 else := {}

status := object.union_n([mins, maxs, generation, conditions])
`

func naiveInput(wecs []WEC) []any {
	out := make([]any, len(wecs))
	for i, w := range wecs {
		out[i] = wecDoc(w, nil)
	}
	return out
}

func naiveEval(b *testing.B, input map[string]any) map[string]any {
	rs, err := rego.New(rego.Query("data.naive.deployment.status"), rego.Module("naive.rego", naiveModule), rego.Input(input)).Eval(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if len(rs) == 0 {
		b.Fatal("naive module: undefined")
	}
	m, _ := NormalizeNumbers(rs[0].Expressions[0].Value).(map[string]any)
	return m
}

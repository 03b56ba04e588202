package collector

import (
	"strings"
	"testing"
)

// TestEvaluateLongKey: a cell whose map has a key longer than an apply body may hold (1,022
// characters as JSON) is Null with a row error naming its column, the key's length and the limit;
// at 1,022 characters it is written. The key is built in CEL, in a group-by value, or taken whole
// from a map in the object.
func TestEvaluateLongKey(t *testing.T) {
	status := func(n int) []WEC {
		return []WEC{wec("w", withStatus(map[string]any{"s": strings.Repeat("x", n-1)}))}
	}
	key := func(n int) string { return "k" + strings.Repeat("x", n-1) }
	const tooLong = "a map key of 1023 characters; an apply body takes keys of at most 1022 characters"
	runEvalCases(t, []evalCase{{
		name: "select, 1,022 characters",
		sc:   statusCollector("c", withSelect("m", "{'k' + returned.status.s: 1}")),
		wecs: status(1022),
		want: result("c", []string{"m"}, row(vobj(`{"`+key(1022)+`":1}`))),
	}, {
		name: "select, 1,023 characters",
		sc:   statusCollector("c", withSelect("wec", "inventory.name"), withSelect("m", "{'k' + returned.status.s: 1}")),
		wecs: status(1023),
		want: withErrors(result("c", []string{"wec", "m"}, row(vs("w"), vnull())), rowErr("w", "m", tooLong)),
	}, {
		name: "escapes count as written: 200 '<' are 1,200 characters",
		sc:   statusCollector("c", withSelect("m", "{returned.status.s: 1}")),
		wecs: []WEC{wec("w", withStatus(map[string]any{"s": strings.Repeat("<", 200)}))},
		want: withErrors(result("c", []string{"m"}, row(vnull())),
			rowErr("w", "m", "a map key of 1200 characters; an apply body takes keys of at most 1022 characters")),
	}, {
		name: "group-by value, 1,023 characters",
		sc:   statusCollector("c", withGroupBy("g", "{'k' + returned.status.s: 1}"), withCount("n")),
		wecs: status(1023),
		want: withErrors(result("c", []string{"g", "n"}), rowErr("w", "g", tooLong)),
	}, {
		name: "a map of the reported state, 1,023 characters",
		sc:   statusCollector("c", withSelect("m", "returned.status")),
		wecs: []WEC{wec("w", withStatus(map[string]any{key(1023): 1}))},
		want: withErrors(result("c", []string{"m"}, row(vnull())), rowErr("w", "m", tooLong)),
	}})
}

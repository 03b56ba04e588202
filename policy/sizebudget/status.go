package sizebudget

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/objview"
)

// StatusOutcome is what Status did to a returned status.
type StatusOutcome string

// The outcomes, from whole to none (docs/rules.md "Size budget").
const (
	StatusWhole    StatusOutcome = "whole"    // within budget as it is
	StatusCut      StatusOutcome = "cut"      // list entries left out, marked by a StatusTrimmed condition
	StatusFallback StatusOutcome = "fallback" // replaced by the Unknown condition alone
	StatusNone     StatusOutcome = "none"     // nothing that fits and is not healthier: not written
)

// Condition types and reason of the returned status's marker.
const (
	ConditionTrimmed  = "StatusTrimmed"  // status True: some list entries were left out
	ConditionReturned = "StatusReturned" // status Unknown: the status did not fit and is not returned
	ReasonOverBudget  = "OverSizeBudget"
)

// StatusTrim is what Status did.
type StatusTrim struct {
	Outcome      StatusOutcome
	Size, Budget int
	// Entries left out, by list path (".status.items"), for StatusCut.
	Entries map[string]int
}

// String is the trim as a sentence, for Events and logs.
func (t StatusTrim) String() string {
	return fmt.Sprintf("object of %d bytes over the object size budget of %d bytes: %s", t.Size, t.Budget, t.Message())
}

// Message is the marker condition's message: what was left out, without the object's size
// (which changes with every write's metadata), so that the same input gives the same status.
func (t StatusTrim) Message() string {
	s := fmt.Sprintf("over the object size budget of %d bytes", t.Budget)
	switch t.Outcome {
	case StatusCut:
		paths := make([]string, 0, len(t.Entries))
		for p := range t.Entries {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for i, p := range paths {
			paths[i] = fmt.Sprintf("%d entries of %s", t.Entries[p], p)
		}
		return s + ": left out " + strings.Join(paths, ", ")
	case StatusFallback:
		return s + ": status not returned, even with its lists cut"
	case StatusNone:
		return s + ": status not written (every smaller form would look healthier)"
	}
	return s + ": whole"
}

// Status returns the status to write into obj (the whole object as it will be stored, without
// managed fields, with the status to return under "status") so that obj stays within budget
// bytes of JSON, and what it did. The rule (docs/rules.md "Size budget"):
//
//  1. within budget: the status as it is;
//  2. else the last entry of the list that takes the most bytes is left out, until it fits —
//     lists anywhere in the status except inside list entries and except `conditions`, and never
//     a list's last entry — and a condition StatusTrimmed=True says so;
//  3. else (or when 2 would look healthier to Argo CD's health check of the kind, policy/health)
//     the status is only the condition StatusReturned=Unknown;
//  4. else (3 would look healthier too) nothing is written: StatusNone, nil.
//
// obj is not modified.
func Status(gk schema.GroupKind, obj map[string]any, budget int) (map[string]any, StatusTrim) {
	status, _ := obj["status"].(map[string]any)
	size := encodedLen(obj)
	if size <= budget || status == nil {
		return status, StatusTrim{Outcome: StatusWhole, Size: size, Budget: budget}
	}
	return overBudget(gk, obj, status, size, budget)
}

// StatusOf is Status for a caller that knows rest, the encoded size of obj without its status
// (which changes less often than the status): an object whose status fits beside rest is not
// encoded as a whole.
func StatusOf(gk schema.GroupKind, obj map[string]any, rest, budget int) (map[string]any, StatusTrim) {
	status, _ := obj["status"].(map[string]any)
	// rest, the field's name and comma, and the status: an upper bound of the object's size.
	size := rest + len(`,"status":`) + encodedLen(status)
	if size <= budget || status == nil {
		return status, StatusTrim{Outcome: StatusWhole, Size: size, Budget: budget}
	}
	return Status(gk, obj, budget)
}

// overBudget is rules 2 to 4 of Status for obj of size bytes, over budget.
func overBudget(gk schema.GroupKind, obj, status map[string]any, size, budget int) (map[string]any, StatusTrim) {
	t := StatusTrim{Outcome: StatusWhole, Size: size, Budget: budget}
	rank := healthRank(gk, obj)
	if cut, entries, ok := cutLists(status, size, budget); ok {
		t.Outcome, t.Entries = StatusCut, entries
		addCondition(cut, ConditionTrimmed, "True", t.Message())
		if fits(obj, cut, budget) && healthRank(gk, with(obj, cut)) >= rank {
			return cut, t
		}
	}
	t.Outcome, t.Entries = StatusFallback, nil
	fb := map[string]any{}
	addCondition(fb, ConditionReturned, "Unknown", t.Message())
	if fits(obj, fb, budget) && healthRank(gk, with(obj, fb)) >= rank {
		return fb, t
	}
	t.Outcome = StatusNone
	return nil, t
}

// healthRank is Argo CD's health rank (policy/health; higher is worse) of obj, or the worst rank
// for kinds without a built-in check: for them no trim is compared.
func healthRank(gk schema.GroupKind, obj map[string]any) int {
	r, ok, err := health.Of(gk, obj)
	if !ok || err != nil {
		return health.Unknown.Rank()
	}
	return r.Status.Rank()
}

// with is obj with status as its status (a shallow copy).
func with(obj, status map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	out["status"] = status
	return out
}

func fits(obj, status map[string]any, budget int) bool {
	return encodedLen(with(obj, status)) <= budget
}

// addCondition appends the marker condition to status's conditions (creating the list).
func addCondition(status map[string]any, typ, st, msg string) {
	conds, _ := status["conditions"].([]any)
	c := map[string]any{"type": typ, "status": st, "reason": ReasonOverBudget, "message": msg}
	status["conditions"] = append(conds[:len(conds):len(conds)], c)
}

// cutList is a list of the status that may lose entries: where it is, and its entries' sizes.
type cutList struct {
	path   string
	parent map[string]any
	key    string
	items  []any
	sizes  []int
	bytes  int
	kept   int
}

// cutLists is status (a deep copy) with entries left out of its lists by rule 2 until the
// object, size bytes now, is estimated within budget, and the entries left out by list path.
func cutLists(status map[string]any, size, budget int) (map[string]any, map[string]int, bool) {
	cp, _ := objview.CopyTree(status).(map[string]any)
	var lists []*cutList
	collectLists(cp, ".status", &lists)
	// The marker condition's cost, bounded: its message names every list.
	est := size + 256
	for _, l := range lists {
		est += len(l.path) + 32
	}
	for est > budget {
		var best *cutList
		for _, l := range lists {
			if l.kept > 1 && (best == nil || l.bytes > best.bytes) {
				best = l
			}
		}
		if best == nil {
			return nil, nil, false
		}
		best.kept--
		best.bytes -= best.sizes[best.kept]
		est -= best.sizes[best.kept]
	}
	entries := map[string]int{}
	for _, l := range lists {
		if l.kept < len(l.items) {
			l.parent[l.key] = l.items[:l.kept]
			entries[l.path] = len(l.items) - l.kept
		}
	}
	return cp, entries, true
}

// collectLists finds the lists of m at path (maps are walked, lists' entries are not), except
// `conditions`, in key order.
func collectLists(m map[string]any, path string, out *[]*cutList) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := m[k].(type) {
		case map[string]any:
			collectLists(v, path+"."+k, out)
		case []any:
			if k == "conditions" || len(v) < 2 {
				continue
			}
			l := &cutList{path: path + "." + k, parent: m, key: k, items: v, sizes: make([]int, len(v)), kept: len(v)}
			for i, e := range v {
				l.sizes[i] = encodedLen(e)
				l.bytes += l.sizes[i]
			}
			*out = append(*out, l)
		}
	}
}

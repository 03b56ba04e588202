package aggregation

import "time"

// cond is one parsed condition entry. t orders lastTransitionTime values (see timeKey).
type cond struct {
	typ, status, ltt string
	t                int64
	m                map[string]any
}

// timeKey maps an RFC 3339 time to an int64 that orders like the time, at second resolution:
// the UTC digits YYYYMMDDhhmmss. Kubernetes writes "2006-01-02T15:04:05Z", read without
// allocation; other offsets go through time.Parse; anything else is 0 (oldest).
func timeKey(s string) int64 {
	if len(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == 'Z' {
		var k int64
		for i := 0; i < 19; i++ {
			c := s[i]
			if c >= '0' && c <= '9' {
				k = k*10 + int64(c-'0')
			} else if i != 4 && i != 7 && i != 10 && i != 13 && i != 16 {
				return 0
			}
		}
		return k
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	u := t.UTC()
	return int64(u.Year())*1e10 + int64(u.Month())*1e8 + int64(u.Day())*1e6 + int64(u.Hour())*1e4 + int64(u.Minute())*100 + int64(u.Second())
}

// parseConds parses a conditions list into out (which it may grow).
func parseConds(v any, out []cond) ([]cond, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		t, ok := m["type"].(string)
		if !ok {
			return nil, false
		}
		s, _ := m["status"].(string)
		l, _ := m["lastTransitionTime"].(string)
		out = append(out, cond{typ: t, status: s, ltt: l, t: timeKey(l), m: m})
	}
	return out, true
}

// combineConditions groups the WECs' condition lists by type (in order of first appearance).
// lists[j] is nil for a WEC without conditions. Per type:
//   - presence "all": an entry only if every WEC has one; "any": if some WEC has one (missing
//     entries do not vote);
//   - negative polarity: any True → True, all False → False, else Unknown; a missing entry is False;
//   - otherwise: any False → False, all True → True, else Unknown; a missing entry is Unknown.
//
// The entry is a copy of the newest entry (by lastTransitionTime, first WEC on ties) whose status
// agrees with the combined one, with the latest lastTransitionTime of all entries; when none agrees,
// reason "Incomplete" says that some WEC did not report the type. One pass, no per-WEC memory.
// docs/aggregation.md ("Conditions") documents the rule.
func combineConditions(lists [][]cond, cp *condPlan) []any {
	var groups condGroups
	for j, l := range lists {
		for i := range l {
			c := &l[i]
			groups.get(c.typ).add(j, c)
		}
	}
	out := make([]any, 0, len(groups.list))
	for _, g := range groups.list {
		if entry, ok := g.entry(cp, len(lists)); ok {
			out = append(out, entry)
		}
	}
	return out
}

// The statuses combineConditions tells apart: the index of a status in condGroup.count and
// condGroup.best.
const (
	condTrue = iota
	condFalse
	condOther
)

// condGroup is what combineConditions keeps about one condition type across the WECs.
type condGroup struct {
	typ     string
	lastJ   int      // the last WEC counted, -1 before the first
	present int      // how many WECs have an entry of this type
	count   [3]int   // entries by status (condTrue, condFalse, condOther)
	best    [3]*cond // by status, the newest entry (first WEC on ties)
	latest  *cond    // the newest entry of any status
}

// linearGroups is how many condition types condGroups searches linearly before it indexes them.
const linearGroups = 8

// condGroups holds the groups in order of first appearance. byType indexes them once there are
// many types: a linear search would be quadratic.
type condGroups struct {
	list   []*condGroup
	byType map[string]*condGroup
}

// get returns the group of typ, adding an empty one when there is none yet.
func (gs *condGroups) get(typ string) *condGroup {
	var g *condGroup
	if gs.byType != nil {
		g = gs.byType[typ]
	} else {
		for _, x := range gs.list {
			if x.typ == typ {
				g = x
				break
			}
		}
	}
	if g != nil {
		return g
	}
	g = &condGroup{typ: typ, lastJ: -1}
	gs.list = append(gs.list, g)
	if gs.byType != nil {
		gs.byType[typ] = g
	} else if len(gs.list) > linearGroups {
		gs.byType = make(map[string]*condGroup, 2*len(gs.list))
		for _, x := range gs.list {
			gs.byType[x.typ] = x
		}
	}
	return g
}

// add counts entry c of WEC j.
func (g *condGroup) add(j int, c *cond) {
	if g.lastJ == j {
		return // a second entry of one type in one WEC: the first counts
	}
	g.lastJ = j
	g.present++
	k := condOther
	switch c.status {
	case "True":
		k = condTrue
	case "False":
		k = condFalse
	}
	g.count[k]++
	if g.best[k] == nil || c.t > g.best[k].t {
		g.best[k] = c
	}
	if g.latest == nil || c.t > g.latest.t {
		g.latest = c
	}
}

// entry is the combined entry of g's type over n WECs; ok is false when the type's presence is
// "all" and some WEC has no entry.
func (g *condGroup) entry(cp *condPlan, n int) (entry map[string]any, ok bool) {
	presence := cp.presence[g.typ]
	missing := n - g.present
	if presence == "all" && missing > 0 {
		return nil, false
	}
	status, k := g.status(cp.negative[g.typ], presence == "", missing)
	entry = map[string]any{}
	if chosen := g.best[k]; chosen != nil && chosen.status == status || (k == condOther && chosen != nil) {
		for key, v := range chosen.m {
			entry[key] = v
		}
	} else {
		entry["type"] = g.typ
		entry["reason"] = "Incomplete"
		entry["message"] = "not every WEC reports this condition"
	}
	entry["status"] = status
	if g.latest.ltt != "" {
		entry["lastTransitionTime"] = g.latest.ltt
	}
	return entry, true
}

// status is the combined status of g's type under polarity neg, with its index in count and best.
// When missingVotes (no presence rule), the missing WECs' entries count as False under negative
// polarity and as Unknown otherwise.
func (g *condGroup) status(neg, missingVotes bool, missing int) (string, int) {
	nTrue, nFalse, nOther := g.count[condTrue], g.count[condFalse], g.count[condOther]
	if missingVotes {
		if neg {
			nFalse += missing
		} else {
			nOther += missing
		}
	}
	switch {
	case neg && nTrue > 0:
		return "True", condTrue
	case neg && nOther == 0:
		return "False", condFalse
	case !neg && nFalse > 0:
		return "False", condFalse
	case !neg && nOther == 0 && nTrue > 0:
		return "True", condTrue
	}
	return "Unknown", condOther
}

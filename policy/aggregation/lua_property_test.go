package aggregation

import (
	"fmt"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// The property test of the Lua-judged kinds: for every health script Argo CD ships, each of its own
// fixtures reported by 1 WEC, and by 3 WECs beside the kind's first Healthy and first Progressing
// fixtures (where it has them; the fixture itself otherwise), in each position — the script's
// verdict on the aggregate equals the worst of its verdicts on each WEC's report.

// luaExcluded lists the shipped checks left out of the property, with the reason. Empty: none is.
var luaExcluded = map[string]string{}

// luaKindFixtures groups Argo CD's fixtures by the kind of their object.
func luaKindFixtures(t *testing.T) (map[schema.GroupKind][]luahealth.Fixture, []schema.GroupKind, int) {
	fixtures, err := luahealth.ArgoCDFixtures()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[schema.GroupKind][]luahealth.Fixture{}
	dirs := map[string]bool{}
	for _, fx := range fixtures {
		if _, out := luaExcluded[fx.Dir]; out {
			continue
		}
		dirs[fx.Dir] = true
		gk := luahealth.GroupKindOf(fx.Object)
		byKind[gk] = append(byKind[gk], fx)
	}
	kinds := make([]schema.GroupKind, 0, len(byKind))
	for gk := range byKind {
		kinds = append(kinds, gk)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	return byKind, kinds, len(dirs)
}

// fixtureWEC is a WEC that reports a fixture's status, having applied WDS generation gen; the WEC
// copy's generation is the fixture's own metadata.generation when it has one.
func fixtureWEC(name string, fx luahealth.Fixture, gen int64) WEC {
	st, _ := fx.Object["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
	}
	w := WEC{Name: name, Status: NormalizeNumbers(st).(map[string]any),
		Details: &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true}}
	if g := objectGeneration(fx.Object); g > 0 {
		w.Details.WECGeneration = &g
	}
	return w
}

// firstWith returns the first fixture with verdict want, or fallback.
func firstWith(fxs []luahealth.Fixture, want health.Status, fallback luahealth.Fixture) luahealth.Fixture {
	for _, fx := range fxs {
		if fx.Want.Status == want {
			return fx
		}
	}
	return fallback
}

func TestLuaProperty(t *testing.T) {
	checks, err := luahealth.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(WithLuaChecks(checks))
	if err != nil {
		t.Fatal(err)
	}
	byKind, kinds, scripts := luaKindFixtures(t)
	var fixtures, cases, lag int
	for _, gk := range kinds {
		fxs := byKind[gk]
		if e.Rule(gk) == GenericModule || e.moduleFor(gk).script == nil {
			t.Errorf("%v: not judged by a Lua check (rule %s)", gk, e.Rule(gk))
			continue
		}
		for _, fx := range fxs {
			fixtures++
			healthy := firstWith(fxs, health.Healthy, fx)
			progressing := firstWith(fxs, health.Progressing, healthy)
			obj := fx.Object
			gen := objectGeneration(obj)
			sets := [][]luahealth.Fixture{{fx}}
			for pos := range 3 {
				others := []luahealth.Fixture{healthy, progressing}
				set := append(append(append([]luahealth.Fixture{}, others[:pos%2]...), fx), others[pos%2:]...)
				if pos == 2 {
					set = []luahealth.Fixture{healthy, progressing, fx}
				}
				sets = append(sets, set)
			}
			for _, set := range sets {
				wecs := make([]WEC, len(set))
				for i, f := range set {
					wecs[i] = fixtureWEC(fmt.Sprintf("wec%d", i), f, gen)
				}
				cases++
				if checkLuaCase(t, e, gk, fx, obj, wecs) {
					lag++
				}
			}
		}
	}
	t.Logf("%d scripts (%d excluded), %d kinds, %d fixtures, %d cases (%d where a lagging WEC's observedGeneration decides)",
		scripts, len(luaExcluded), len(kinds), fixtures, cases, lag)
}

// checkLuaCase aggregates one case and checks the property; it reports whether the case is the
// documented trade-off of the observedGeneration rule (a lagging WEC beside a worse, current one).
func checkLuaCase(t *testing.T, e *Engine, gk schema.GroupKind, fx luahealth.Fixture, obj map[string]any, wecs []WEC) bool {
	t.Helper()
	gen := objectGeneration(obj)
	out, err := e.Returned(gk, obj, wecs)
	if err != nil {
		t.Fatalf("%s %s: %v", fx.Dir, fx.Path, err)
	}
	worst, allCurrent, worstCurrent := health.Status(""), true, false
	for _, w := range wecs {
		cur := isCurrent(w.Details, w.Status, gen)
		allCurrent = allCurrent && cur
		v, _ := e.Health(gk, JudgedObject(obj, w.Status, gen, cur))
		if verdictRank(v.Status) > verdictRank(worst) {
			worst, worstCurrent = v.Status, cur
		}
	}
	got, _ := e.Health(gk, withStatus(obj, out))
	if got.Status == worst {
		return false
	}
	if !allCurrent && worstCurrent && len(wecs) > 1 && got.Status == health.Progressing && verdictRank(worst) > verdictRank(health.Progressing) {
		return true // observedGeneration is gen-1 while a WEC lags: Progressing (docs/aggregation.md, Lua health checks)
	}
	t.Errorf("%s %s at %d WECs: aggregate %q (%s), worst WEC %q", fx.Dir, fx.Path, len(wecs), got.Status, got.Message, worst)
	return false
}

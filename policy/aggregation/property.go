package aggregation

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/luahealth"
)

// The property of docs/aggregation.md, for whatever module is in force for a kind (a user's
// AggregationPolicy included): over many multi-WEC cases, Argo CD's health of the aggregate — by the
// kind's Lua check, else its check in Go — is the worst of the WECs' health. WEC statuses come from
// the generators of the kinds with a built-in module (propgen.go), or from Argo CD's own fixtures
// of the kind's Lua check. The one trade-off accepted is the observedGeneration rule's: while a WEC
// lags, the aggregate may show Progressing instead of a worse verdict.

// PropertyReport is what CheckProperty found for one kind.
type PropertyReport struct {
	Kind     schema.GroupKind
	Source   string // where the WEC statuses come from: "generated" or "argo-cd fixtures"
	Cases    int
	Failed   int
	Failures []PropertyFailure // the first few
}

// PropertyFailure is one case whose aggregate hides the worst WEC's health.
type PropertyFailure struct {
	Object    map[string]any
	WECs      []WEC
	Verdicts  []health.Result // each WEC's, in WECs' order
	Aggregate map[string]any
	Got       health.Result // the aggregate's
}

func (f PropertyFailure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the aggregate is %s", f.Got.Status)
	if f.Got.Message != "" {
		fmt.Fprintf(&b, " (%s)", f.Got.Message)
	}
	b.WriteString(", the WECs are")
	for i, w := range f.WECs {
		fmt.Fprintf(&b, " %s=%s", w.Name, orNone(f.Verdicts[i].Status))
	}
	fmt.Fprintf(&b, "\n  aggregate: %s", compactJSON(f.Aggregate))
	for _, w := range f.WECs {
		fmt.Fprintf(&b, "\n  %s: %s", w.Name, compactJSON(w.Status))
	}
	return b.String()
}

func orNone(s health.Status) string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

const maxPropertyFailures = 3

// CheckProperty runs the property over cases generated cases (seeded) for kind gk, with the module
// in force in e. It is an error when Argo CD does not judge gk or no statuses can be generated for it.
func (e *Engine) CheckProperty(gk schema.GroupKind, cases int, seed uint64) (PropertyReport, error) {
	rep := PropertyReport{Kind: gk}
	if e.HealthCheck(gk) == "" {
		return rep, fmt.Errorf("Argo CD has no health check for %s: the property does not apply", gk)
	}
	r := rand.New(rand.NewPCG(seed, uint64(len(gk.Kind))))
	next, source, err := e.caseSource(gk, r)
	if err != nil {
		return rep, err
	}
	rep.Source = source
	for range cases {
		obj, wecs := next()
		f, ok, err := e.propertyCase(gk, obj, wecs)
		if err != nil {
			return rep, err
		}
		rep.Cases++
		if !ok {
			rep.Failed++
			if len(rep.Failures) < maxPropertyFailures {
				rep.Failures = append(rep.Failures, f)
			}
		}
	}
	return rep, nil
}

// caseSource returns the case generator of gk: the built-in kinds' generators, else Argo CD's
// fixtures of the kind's Lua check.
func (e *Engine) caseSource(gk schema.GroupKind, r *rand.Rand) (func() (map[string]any, []WEC), string, error) {
	if g, ok := generators[gk]; ok && !strings.HasPrefix(e.HealthCheck(gk), "lua/") {
		return func() (map[string]any, []WEC) {
			gen := 1 + r.Int64N(5)
			obj := map[string]any{"apiVersion": gvFor(gk), "kind": gk.Kind,
				"metadata": map[string]any{"name": "w", "namespace": "ns", "generation": gen}, "spec": g.spec(r)}
			healthy := func(w WEC) bool {
				v, _ := e.Health(gk, JudgedObject(obj, w.Status, gen, isCurrent(w.Details, w.Status, gen)))
				return v.Status == health.Healthy
			}
			return obj, genWECs(r, g, obj, gen, 1+r.IntN(5), healthy)
		}, "generated", nil
	}
	all, err := luahealth.ArgoCDFixtures()
	if err != nil {
		return nil, "", err
	}
	var fxs []map[string]any
	for _, fx := range all {
		if luahealth.GroupKindOf(fx.Object) == gk {
			fxs = append(fxs, NormalizeNumbers(fx.Object).(map[string]any))
		}
	}
	if len(fxs) == 0 {
		return nil, "", fmt.Errorf("no example statuses for %s: neither a kind with a built-in module nor one with Argo CD fixtures", gk)
	}
	return func() (map[string]any, []WEC) { return fixtureCase(r, fxs) }, "argo-cd fixtures", nil
}

// fixtureCase is a case made of fixtures: the WDS object of one, 1 to 5 WECs reporting the status
// of any (the WEC copy at that fixture's own generation), one in eight lagging a generation.
func fixtureCase(r *rand.Rand, fxs []map[string]any) (map[string]any, []WEC) {
	obj := fxs[r.IntN(len(fxs))]
	gen := objectGeneration(obj)
	wecs := make([]WEC, 1+r.IntN(5))
	for i := range wecs {
		fx := fxs[r.IntN(len(fxs))]
		st, _ := fx["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
		}
		d := &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true}
		if r.IntN(8) == 0 && gen > 0 {
			d.LastGeneration = gen - 1
		}
		if g := objectGeneration(fx); g > 0 {
			d.WECGeneration = &g
		}
		wecs[i] = WEC{Name: fmt.Sprintf("wec%d", i), Status: st, Details: d}
	}
	return obj, wecs
}

// propertyCase aggregates one case and checks the property; ok is false for a counterexample.
func (e *Engine) propertyCase(gk schema.GroupKind, obj map[string]any, wecs []WEC) (PropertyFailure, bool, error) {
	gen := objectGeneration(obj)
	out, err := e.Returned(gk, obj, wecs)
	if err != nil || out == nil {
		return PropertyFailure{}, true, err
	}
	f := PropertyFailure{Object: obj, WECs: wecs, Aggregate: out}
	worst, anyLag := health.Status(""), false
	for _, w := range wecs {
		cur := isCurrent(w.Details, w.Status, gen)
		anyLag = anyLag || !cur
		v, _ := e.Health(gk, JudgedObject(obj, w.Status, gen, cur))
		f.Verdicts = append(f.Verdicts, v)
		if verdictRank(v.Status) > verdictRank(worst) {
			worst = v.Status
		}
	}
	written := JudgedObject(obj, nil, gen, true) // the WDS object with the aggregate, as written
	written["status"] = out
	f.Got, _ = e.Health(gk, written)
	ok := f.Got.Status == worst ||
		anyLag && f.Got.Status == health.Progressing && verdictRank(worst) > verdictRank(health.Progressing)
	return f, ok, nil
}

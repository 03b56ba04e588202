package aggregation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
	"github.com/statusfold/statusfold/policy/luahealth"
)

var widgetGK = schema.GroupKind{Group: "example.com", Kind: "Widget"}

// widgetChecks judges example.com/Widget by status.phase, as a user's argocd-cm entry would.
func widgetChecks(t *testing.T, script string) *luahealth.Checks {
	t.Helper()
	b, err := luahealth.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c, problems := b.WithConfigMap(map[string]string{"resource.customizations.health.example.com_Widget": script}, luahealth.DefaultLimits())
	if problems != nil {
		t.Fatal(problems)
	}
	return c
}

const phaseScript = `
local hs = {status = "Healthy"}
if obj.status ~= nil and obj.status.phase == "Broken" then hs.status = "Degraded" end
if obj.status ~= nil and obj.status.phase == "Starting" then hs.status = "Progressing" end
return hs`

func TestLuaRule(t *testing.T) {
	e, err := NewEngine(WithLuaChecks(widgetChecks(t, phaseScript)))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Rule(widgetGK); got != "lua/configmap/example.com/Widget" {
		t.Errorf("rule %q", got)
	}
	obj := map[string]any{"metadata": map[string]any{"generation": int64(2)}}
	s := e.NewState(widgetGK)
	s.SetObject(obj)
	for _, w := range []WEC{
		{Name: "a", Status: map[string]any{"phase": "Running", "observedGeneration": int64(2), "n": int64(1)}, Details: applied(2)},
		{Name: "b", Status: map[string]any{"phase": "Starting", "observedGeneration": int64(2), "n": int64(2)}, Details: applied(2)},
		{Name: "c", Status: map[string]any{"phase": "Starting", "observedGeneration": int64(2), "n": int64(3)}, Details: applied(2)},
	} {
		s.UpsertWEC(w)
	}
	wantResult(t, s, `{"n":2,"observedGeneration":2,"phase":"Starting"}`) // the worst, first by name on ties
	s.UpsertWEC(WEC{Name: "c", Status: map[string]any{"phase": "Broken", "observedGeneration": int64(1), "n": int64(3)}, Details: applied(1)})
	wantResult(t, s, `{"n":3,"observedGeneration":1,"phase":"Broken"}`) // c lags: generation−1
	v := s.Verdicts()
	if len(v) != 3 || v[0].Health.Status != health.Healthy || v[2].Health.Status != health.Degraded {
		t.Errorf("verdicts %+v", v)
	}
	// A new script for the kind: the State re-judges every WEC.
	e.SetLuaChecks(widgetChecks(t, `return {status = "Healthy"}`))
	wantResult(t, s, `{"n":1,"observedGeneration":1,"phase":"Running"}`)
	// Without Lua checks the generic rules apply again.
	e.SetLuaChecks(nil)
	if got := e.Rule(widgetGK); got != "builtin/"+GenericModule {
		t.Errorf("rule %q", got)
	}
}

// A user's Lua check for a kind with a built-in module wins, as in Argo CD.
func TestLuaOverridesBuiltinModule(t *testing.T) {
	b, _ := luahealth.Builtin()
	c, _ := b.WithConfigMap(map[string]string{"resource.customizations.health.apps_Deployment": `return {status = "Healthy"}`}, luahealth.DefaultLimits())
	e, err := NewEngine(WithLuaChecks(c))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Rule(schema.GroupKind{Group: "apps", Kind: "Deployment"}); got != "lua/configmap/apps/Deployment" {
		t.Errorf("rule %q", got)
	}
	if got := e.Rule(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}); got != "builtin/statefulset.rego" {
		t.Errorf("rule %q", got)
	}
}

// User modules see each WEC's verdict as input.wecs[i].health (full mode) and input.wec.health
// (wec_rank).
func TestHealthInput(t *testing.T) {
	e, err := NewEngine(WithLuaChecks(widgetChecks(t, phaseScript)))
	if err != nil {
		t.Fatal(err)
	}
	full := policy("full", "Widget", `package widgets
status := {"verdicts": [w.health.status | some w in input.wecs]}
`)
	ranked := policy("ranked", "Widget", `package widgets
import data.statusfold.builtin.health
combine := {"*": "from_worst"}
wec_rank := health.rank[input.wec.health.status]
`)
	wecs := []WEC{
		{Name: "a", Status: map[string]any{"phase": "Broken", "id": "a"}},
		{Name: "b", Status: map[string]any{"phase": "Starting", "id": "b"}},
	}
	for _, tc := range []struct {
		p    string
		want string
	}{{"full", `{"verdicts":["Degraded","Progressing"]}`}, {"ranked", `{"id":"a","phase":"Broken"}`}} {
		p := full
		if tc.p == "ranked" {
			p = ranked
		}
		if errs := e.SetPolicy(p); errs != nil {
			t.Fatal(errs)
		}
		got, err := e.Returned(widgetGK, map[string]any{}, wecs)
		if err != nil || compactJSON(got) != tc.want {
			t.Errorf("%s: got %s %v, want %s", tc.p, compactJSON(got), err, tc.want)
		}
		e.RemovePolicy(p.Name)
	}
}

func wantResult(t *testing.T, s *State, want string) {
	t.Helper()
	got, err := s.Result()
	if err != nil || compactJSON(got) != want {
		t.Errorf("got %s %v, want %s", compactJSON(got), err, want)
	}
}

// A check that fails on a WEC's report makes that WEC Unknown (as Argo CD does) and is reported
// through WithScriptErrors; the other WECs are judged as before.
func TestLuaScriptErrors(t *testing.T) {
	var failures []string
	e, err := NewEngine(WithLuaChecks(widgetChecks(t, `if obj.status.phase == "Odd" then error("odd phase") end
return {status = "Healthy"}`)), WithScriptErrors(func(gk schema.GroupKind, rule string, err error) {
		failures = append(failures, gk.String()+" "+rule+" "+err.Error())
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewState(widgetGK)
	s.SetObject(map[string]any{})
	s.UpsertWEC(WEC{Name: "a", Status: map[string]any{"phase": "Fine"}})
	s.UpsertWEC(WEC{Name: "b", Status: map[string]any{"phase": "Odd"}})
	wantResult(t, s, `{"phase":"Odd"}`)
	if v := s.Verdicts(); v[0].Health.Status != health.Healthy || v[1].Health.Status != health.Unknown {
		t.Errorf("verdicts %+v", v)
	}
	if len(failures) != 1 || !strings.Contains(failures[0], "Widget.example.com lua/configmap/example.com/Widget") || !strings.Contains(failures[0], "odd phase") {
		t.Errorf("failures %q", failures)
	}
}

func TestReadsHealth(t *testing.T) {
	for src, want := range map[string]bool{
		"package p\nstatus := {\"n\": count(input.wecs)}":                                                            false,
		"package p\nimport data.statusfold.builtin.health\ncombine := {\"*\": \"generic\"}":                          false,
		"package p\nwec_rank := 1 if input.wec.health.status == \"Degraded\"\ncombine := {}":                         true,
		"package p\nstatus := {\"v\": [w.health.status | some w in input.wecs]}":                                     true,
		"package p\nstatus := {\"v\": [s | some w in input.wecs; s := w[\"health\"][\"status\"]]}":                   true,
		"package p\nwec_rank := object.get(object.get(input.wec, \"health\", {}), \"status\", \"\") == \"Degraded\"": true,
	} {
		if got := readsHealth(src); got != want {
			t.Errorf("readsHealth(%q) = %v, want %v", src, got, want)
		}
	}
}

package luahealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/health"
)

var widget = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func userChecks(t *testing.T, data map[string]string, lim Limits) *Checks {
	t.Helper()
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c, problems := b.WithConfigMap(data, lim)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	return c
}

func TestUserScripts(t *testing.T) {
	c := userChecks(t, map[string]string{
		"resource.customizations.health.example.com_Widget": `
hs = {status = "Healthy", message = "ready"}
if obj.status == nil or obj.status.ready ~= true then hs.status = "Progressing" end
return hs`,
		"resource.customizations.health.argoproj.io_Rollout":     `return {status = "Suspended"}`,
		"resource.customizations.health.*.acme.io_*":             `return {status = "Degraded", message = "wild"}`,
		"resource.customizations.health.ConfigMap":               `return {}`,
		"resource.customizations.health.example.com_Gadget":      `return {status = string.upper("healthy")}`,
		"resource.customizations.useOpenLibs.example.com_Gadget": "true",
		"resource.customizations.ignoreDifferences.all":          "ignored",
	}, DefaultLimits())
	cases := []struct {
		name string
		gk   schema.GroupKind
		obj  map[string]any
		want health.Result
		ok   bool
	}{
		{"user script", widget, map[string]any{"status": map[string]any{"ready": true}}, health.Result{Status: health.Healthy, Message: "ready"}, true},
		{"user script, globals fresh per call", widget, map[string]any{}, health.Result{Status: health.Progressing, Message: "ready"}, true},
		{"user script before Argo CD's", schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}, nil, health.Result{Status: health.Suspended}, true},
		{"user wildcard", schema.GroupKind{Group: "x.acme.io", Kind: "Thing"}, nil, health.Result{Status: health.Degraded, Message: "wild"}, true},
		{"core group, empty table is no verdict", schema.GroupKind{Kind: "ConfigMap"}, nil, health.Result{}, true},
		{"useOpenLibs opens string", schema.GroupKind{Group: "example.com", Kind: "Gadget"}, nil, health.Result{Status: health.Unknown, Message: "Lua returned an invalid health status"}, true},
		{"Argo CD's wildcard", schema.GroupKind{Group: "ec2.aws.upbound.io", Kind: "VPC"}, map[string]any{}, health.Result{Status: health.Progressing, Message: "Provisioning ..."}, true},
		{"no script", schema.GroupKind{Group: "apps", Kind: "Deployment"}, nil, health.Result{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := c.Health(tc.gk, tc.obj)
			if err != nil || ok != tc.ok || got != tc.want {
				t.Errorf("got %+v %v %v, want %+v %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestConfigMapProblems(t *testing.T) {
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c, problems := b.WithConfigMap(map[string]string{
		"resource.customizations.health.argoproj.io_Rollout":     `return {status = `,
		"resource.customizations.health.a_b_c":                   `return {}`,
		"resource.customizations.health.example.com_Widget":      `return {}`,
		"resource.customizations.useOpenLibs.example.com_Widget": "maybe",
		"resource.customizations.health.example.com_Fine":        `return {status = "Healthy"}`,
	}, DefaultLimits())
	var keys []string
	for _, p := range problems {
		keys = append(keys, p.Key)
	}
	want := "resource.customizations.health.a_b_c resource.customizations.health.argoproj.io_Rollout resource.customizations.useOpenLibs.example.com_Widget"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("problems %q, want %q (%v)", got, want, problems)
	}
	if s := c.For(schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}); s == nil || s.Source != SourceArgoCD {
		t.Errorf("a broken user script must leave Argo CD's in force, got %+v", s)
	}
	if s := c.For(schema.GroupKind{Group: "example.com", Kind: "Fine"}); s == nil || s.Source != SourceConfigMap {
		t.Errorf("a good entry beside broken ones must be taken, got %+v", s)
	}
}

func TestBounds(t *testing.T) {
	lim := Limits{Timeout: time.Minute, MaxInstructions: 100_000, MaxStringBytes: 1 << 16}
	scripts := map[string]string{
		"Loop":    `while true do end`,
		"Pcall":   `while true do pcall(function() while true do end end) end`,
		"Rep":     `return {status = string.rep("x", 1000000)}`,
		"Concat":  `local t = {} for i = 1, 1000 do t[i] = string.rep("x", 1000) end return {message = table.concat(t)}`,
		"Format":  `return {message = string.format("%999d", 1)}`,
		"File":    `return dofile("/etc/passwd")`,
		"Exit":    `os.exit(1)`,
		"Require": `require("io")`,
		"Type":    `return 42`,
	}
	data := map[string]string{}
	for k, src := range scripts {
		data["resource.customizations.health.example.com_"+k] = src
		data["resource.customizations.useOpenLibs.example.com_"+k] = "true"
	}
	c := userChecks(t, data, lim)
	for k := range scripts {
		t.Run(k, func(t *testing.T) {
			r, _, err := c.Health(schema.GroupKind{Group: "example.com", Kind: k}, map[string]any{})
			if err == nil {
				t.Errorf("want an error, got %+v", r)
			}
		})
	}
	slow := userChecks(t, map[string]string{"resource.customizations.health.example.com_Loop": `while true do end`},
		Limits{Timeout: 50 * time.Millisecond, MaxInstructions: 1 << 62, MaxStringBytes: 1 << 16})
	if _, _, err := slow.Health(schema.GroupKind{Group: "example.com", Kind: "Loop"}, nil); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("want the deadline to stop the loop, got %v", err)
	}
	// A state that failed is not reused; the next call works.
	if r, _, err := c.Health(widget, nil); err != nil || r.Status != "" {
		t.Errorf("got %+v %v", r, err)
	}
}

// Calls of one script from several goroutines each get their own Lua state and environment.
func TestConcurrentCalls(t *testing.T) {
	c := userChecks(t, map[string]string{"resource.customizations.health.example.com_Widget": `
seen = (seen or 0) + 1
if seen > 1 then return {status = "Degraded", message = "globals leaked between calls"} end
if obj.status.n % 2 == 0 then return {status = "Healthy"} end
return {status = "Progressing"}`}, DefaultLimits())
	errs := make(chan string, 8)
	for g := range 4 {
		go func() {
			defer func() { errs <- "" }()
			for i := range 200 {
				n := int64(g*1000 + i)
				want := health.Progressing
				if n%2 == 0 {
					want = health.Healthy
				}
				r, _, err := c.Health(widget, map[string]any{"status": map[string]any{"n": n}})
				if err != nil || r.Status != want {
					errs <- fmt.Sprintf("n=%d: %+v %v, want %s", n, r, err, want)
					return
				}
			}
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

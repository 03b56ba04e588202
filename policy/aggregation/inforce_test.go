package aggregation

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPolicyInForce: of several valid policies for one kind the smallest name is in force, and
// each installed policy says which one is; the answer follows every install, removal, change of
// target kind and rejection.
func TestPolicyInForce(t *testing.T) {
	e := newEngine(t)
	gkGadget := schema.GroupKind{Group: "example.com", Kind: "Gadget"}
	sum := "package y\ncombine := {\"n\": \"sum\"}\n"
	type standing struct {
		name    string
		ok      bool
		target  schema.GroupKind
		inForce string
	}
	steps := []struct {
		name       string
		do         func()
		widget     string // PolicyInForce(Widget)
		gadget     string // PolicyInForce(Gadget)
		superseded int
		want       []standing
	}{
		{name: "none installed", do: func() {}, want: []standing{{name: "p-max"}}},
		{name: "one: in force", do: func() { e.SetPolicy(policy("p-max", "Widget", maxModule)) },
			widget: "p-max", want: []standing{{"p-max", true, gkWidget, "p-max"}}},
		{name: "a larger name: superseded", do: func() { e.SetPolicy(policy("q-sum", "Widget", sum)) },
			widget: "p-max", superseded: 1,
			want: []standing{{"p-max", true, gkWidget, "p-max"}, {"q-sum", true, gkWidget, "p-max"}}},
		{name: "an invalid smaller name: not installed, changes nothing", do: func() { e.SetPolicy(policy("a-bad", "Widget", "package x\n")) },
			widget: "p-max", superseded: 1,
			want: []standing{{name: "a-bad"}, {"p-max", true, gkWidget, "p-max"}, {"q-sum", true, gkWidget, "p-max"}}},
		{name: "a smaller name: in force, both others superseded", do: func() { e.SetPolicy(policy("a-sum", "Widget", sum)) },
			widget: "a-sum", superseded: 2,
			want: []standing{{"a-sum", true, gkWidget, "a-sum"}, {"p-max", true, gkWidget, "a-sum"}, {"q-sum", true, gkWidget, "a-sum"}}},
		{name: "the one in force moves to another kind", do: func() { e.SetPolicy(policy("a-sum", "Gadget", sum)) },
			widget: "p-max", gadget: "a-sum", superseded: 1,
			want: []standing{{"a-sum", true, gkGadget, "a-sum"}, {"p-max", true, gkWidget, "p-max"}, {"q-sum", true, gkWidget, "p-max"}}},
		{name: "the one in force removed: the next name", do: func() { e.RemovePolicy("p-max") },
			widget: "q-sum", gadget: "a-sum",
			want: []standing{{name: "p-max"}, {"q-sum", true, gkWidget, "q-sum"}}},
	}
	for _, st := range steps {
		st.do()
		if got := e.PolicyInForce(gkWidget); got != st.widget {
			t.Errorf("%s: PolicyInForce(Widget) %q, want %q", st.name, got, st.widget)
		}
		if got := e.PolicyInForce(gkGadget); got != st.gadget {
			t.Errorf("%s: PolicyInForce(Gadget) %q, want %q", st.name, got, st.gadget)
		}
		if got := e.Superseded(); got != st.superseded {
			t.Errorf("%s: Superseded() %d, want %d", st.name, got, st.superseded)
		}
		for _, w := range st.want {
			s, ok := e.PolicyStanding(w.name)
			if ok != w.ok || s.Target != w.target || s.InForce != w.inForce {
				t.Errorf("%s: PolicyStanding(%q) = %+v, %v; want target %v, in force %q, %v", st.name, w.name, s, ok, w.target, w.inForce, w.ok)
			}
			if ok && s.Superseded() != (w.inForce != w.name) {
				t.Errorf("%s: %q Superseded() %v", st.name, w.name, s.Superseded())
			}
		}
	}
}

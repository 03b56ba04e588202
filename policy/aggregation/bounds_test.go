package aggregation

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/internal/memtest"
)

// maxHeapGrowth is how much the heap may grow while one hostile evaluation runs.
const maxHeapGrowth = 256 << 20

// renderTemplateBomb is the reproduction of the finding: a template whose cost is the fourth
// power of its data, reached only when the object has three or more metadata fields, so that
// examples with a smaller object never run it.
func renderTemplateBomb(n int) string {
	return fmt.Sprintf(`package bomb

combine := {"*": "generic", "x": "min"} if count(object.keys(input.object.metadata)) < 3
combine := {"*": "generic", "x": y} if {
	count(object.keys(input.object.metadata)) >= 3
	y := strings.render_template("{{range $.a}}{{range $.a}}{{range $.a}}{{range $.a}}x{{end}}{{end}}{{end}}{{end}}", {"a": numbers.range(1, %d)})
}
`, n)
}

// TestRenderTemplateBombRefused: the reproduction, with 120 and 200 elements, does not compile —
// strings.render_template is not in the sandbox — although its example never reaches the template.
func TestRenderTemplateBombRefused(t *testing.T) {
	for _, n := range []int{120, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := policy("bomb", "Widget", renderTemplateBomb(n), example("small", `{"n":1,"phase":"Up"}`))
			start := time.Now()
			errs := ValidatePolicy(p)
			if len(errs) == 0 {
				t.Fatal("the policy was accepted")
			}
			if msg := errs.ToAggregate().Error(); !strings.Contains(msg, "strings.render_template") {
				t.Errorf("errors %q do not name strings.render_template", msg)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("validation took %s", d)
			}
		})
	}
}

// hostileEvaluations use only builtins the sandbox keeps, and each would run long or grow the
// heap without the engine's bounds. Each must end, within twice its time bound, with an error
// containing want, and the heap must not grow by more than maxHeapGrowth meanwhile. A case that
// the deadline stops (want "exceeded") has the engine's 1 s; one that a size bound must stop runs
// under a deadline it cannot reach, so that which bound stops it does not depend on the machine's
// speed (a slow machine would otherwise reach the deadline first).
var hostileEvaluations = []struct{ name, src, want string }{
	{"deep comprehension", `r := numbers.range(1, 1000)
status := {"n": count([x | some i in r; some j in r; some k in r; x := i * j * k])}`, "exceeded"},
	{"shared-subterm result", dagSource(20) + `status := {"x": a20}`, "larger than"},
	{"shared-subterm json.marshal", dagSource(20) + `status := {"n": count(json.marshal([a20, a20, a20, a20]))}`, "builtin"},
	{"copies of a large string", doublingSource(16) + `status := {"n": count([upper(s16) | some i in numbers.range(1, 600)])}`, "builtin"},
	{"string doubling", doublingSource(26) + `status := {"n": count(s26)}`, "builtin"},
	{"sprintf padding", `status := {"n": count(sprintf(concat("", ["%0999999d" | some i in numbers.range(1, 300)]), [1 | some i in numbers.range(1, 300)]))}`, "builtin"},
	{"numbers.range span", `status := {"n": count(numbers.range(1, 10000000))}`, "numbers.range"},
	{"big-integer squaring", squaringSource(18) + `status := {"n": count(format_int(n18, 10))}`, "builtin"},
}

// dagSource defines a0 … a<n>, each a list of two of the previous: 2^n leaves in n terms.
func dagSource(n int) string {
	var b strings.Builder
	b.WriteString("a0 := \"xxxxxxxx\"\n")
	for i := range n {
		fmt.Fprintf(&b, "a%d := [a%d, a%d]\n", i+1, i, i)
	}
	return b.String()
}

// doublingSource defines s0 … s<n>, each the previous concatenated with itself.
func doublingSource(n int) string {
	var b strings.Builder
	b.WriteString("s0 := \"xxxxxxxxxxxxxxxx\"\n")
	for i := range n {
		fmt.Fprintf(&b, "s%d := concat(\"\", [s%d, s%d])\n", i+1, i, i)
	}
	return b.String()
}

// squaringSource defines n0 … n<k>, each the square of the previous: 2^k digits in k products.
func squaringSource(k int) string {
	var b strings.Builder
	b.WriteString("n0 := 12345678901234567\n")
	for i := range k {
		fmt.Fprintf(&b, "n%d := n%d * n%d\n", i+1, i, i)
	}
	return b.String()
}

func TestHostileEvaluationsBounded(t *testing.T) {
	wecs := []WEC{{Name: "a", Status: map[string]any{"n": int64(1)}}, {Name: "b", Status: map[string]any{"n": int64(2)}}}
	for _, tc := range hostileEvaluations {
		t.Run(tc.name, func(t *testing.T) {
			limit := time.Second
			if tc.want != "exceeded" {
				limit = time.Minute
			}
			e := newEngine(t, WithTimeout(limit))
			if errs := e.SetPolicy(policy("hostile", "Widget", "package hostile\n\n"+tc.src)); len(errs) > 0 {
				t.Fatal(errs)
			}
			var err error
			peak, d := memtest.HeapGrowth(func() { _, err = e.Returned(gkWidget, map[string]any{}, wecs) })
			t.Logf("%s, heap +%d MiB: %v", d, peak>>20, err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if d > 2*limit {
				t.Errorf("the evaluation took %s, more than twice its bound of %s", d, limit)
			}
			if peak > maxHeapGrowth {
				t.Errorf("the heap grew by %d MiB, more than %d MiB", peak>>20, maxHeapGrowth>>20)
			}
		})
	}
}

// slowRank is a module whose wec_rank takes about 300 ms per WEC.
const slowRank = `package slowrank

combine := {"*": "generic", "n": "from_worst"}
wec_rank := count([x | some i in r; some j in r; some k in r; x := 1]) if {
	input.wec.name != ""
	r := numbers.range(1, 300)
}
`

// TestOneDeadlinePerObject: the wec_rank of every WEC and the rest of one object's evaluation share
// one deadline, with Returned and with an incremental State.
func TestOneDeadlinePerObject(t *testing.T) {
	e := newEngine(t, WithTimeout(time.Second))
	if errs := e.SetPolicy(policy("slowrank", "Widget", slowRank)); len(errs) > 0 {
		t.Fatal(errs)
	}
	var wecs []WEC
	for i := range 12 {
		wecs = append(wecs, WEC{Name: fmt.Sprintf("w%02d", i), Status: map[string]any{"n": int64(i)}})
	}
	check := func(t *testing.T, run func() error) {
		start := time.Now()
		err := run()
		d := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "exceeded 1s") {
			t.Errorf("err = %v, want the object's deadline", err)
		}
		if d > 2*time.Second {
			t.Errorf("the object's evaluation took %s", d)
		}
	}
	t.Run("Returned", func(t *testing.T) {
		check(t, func() error { _, err := e.Returned(gkWidget, map[string]any{}, wecs); return err })
	})
	t.Run("State", func(t *testing.T) {
		s := e.NewState(gkWidget)
		s.SetObject(map[string]any{})
		for _, w := range wecs {
			s.UpsertWEC(w)
		}
		check(t, func() error { _, err := s.Result(); return err })
	})
}

// slowSource is a module whose every evaluation runs for far longer than any bound.
const slowSource = `count([x | r := numbers.range(1, 1000); some i in r; some j in r; some k in r; x := 1])`

// TestAdmissionBounded: compiling a module (its static combine) and running its examples takes at
// most 2 s in all, well under the webhook's 10 s, however slow the module.
func TestAdmissionBounded(t *testing.T) {
	t.Run("static combine", func(t *testing.T) {
		p := policy("slowcombine", "Widget", "package slow\ncombine := {\"n\": \"min\"} if "+slowSource+" > 0\n")
		start := time.Now()
		errs := ValidatePolicy(p)
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("validation took %s, want at most the 1s bound of a compile-time evaluation", d)
		}
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "exceeded") {
			t.Errorf("errs = %v, want a time-bound error", errs)
		}
	})
	t.Run("examples", func(t *testing.T) {
		var exs []policyv1alpha1.AggregationExample
		for i := range 8 {
			exs = append(exs, example(fmt.Sprintf("e%d", i), `{"n":1}`))
		}
		p := policy("slowexamples", "Widget", "package slow\nstatus := {\"n\": "+slowSource+"}\n", exs...)
		start := time.Now()
		errs := ValidatePolicy(p)
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("validation took %s, want at most 2s for compilation and examples", d)
		}
		if len(errs) == 0 {
			t.Error("the policy was accepted")
		}
	})
}

// TestConcurrentEvaluationsLimited: with room for one Rego evaluation at a time, two slow
// evaluations run one after the other, each with its whole time bound.
func TestConcurrentEvaluationsLimited(t *testing.T) {
	e := newEngine(t, WithTimeout(300*time.Millisecond), WithMaxConcurrentEvaluations(1))
	if errs := e.SetPolicy(policy("slow", "Widget", "package slow\nstatus := {\"n\": "+slowSource+"}\n")); len(errs) > 0 {
		t.Fatal(errs)
	}
	wecs := []WEC{{Name: "a", Status: map[string]any{"n": int64(1)}}, {Name: "b", Status: map[string]any{"n": int64(2)}}}
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := e.Returned(gkWidget, map[string]any{}, wecs); err == nil || !strings.Contains(err.Error(), "exceeded") {
				t.Errorf("err = %v, want a time-bound error", err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < 550*time.Millisecond {
		t.Errorf("two evaluations took %s together: they ran at the same time", d)
	}
}

// TestExpansionRefused: rules built from shared subterms that OPA's type checker (which cannot be
// stopped) would walk for minutes are refused before compilation, within the admission bound.
func TestExpansionRefused(t *testing.T) {
	p := policy("dag", "Widget", "package dag\n\n"+dagSource(30)+`status := {"x": count(a30)}`)
	start := time.Now()
	errs := ValidatePolicy(p)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("validation took %s", d)
	}
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "rule a") {
		t.Errorf("errs = %v, want the expansion refused", errs)
	}
}

package hostile

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/statusfold/statusfold/policy/collector"
)

// The limits the entry-point suite holds every case to (docs/security.md, "Rego sandbox" and "CEL
// sandbox"): each entry point must refuse a case or finish it within twice the limit that applies,
// with the process's memory at most entryHeap above its baseline.
const (
	// admissionLimit bounds the admission check of an aggregation policy (compiling, the static
	// `combine`, the examples); collector checks have no clock, only cost limits, and are held to
	// the same.
	admissionLimit = 2 * time.Second
	// evaluationLimit is the aggregation engine's deadline for one object.
	evaluationLimit = time.Second
	// collectorBudget is the collectors' time budget the manager runs with.
	collectorBudget = collector.DefaultTimeBudget
	// entryHeap is the memory any case may add to a process's baseline.
	entryHeap = 256 << 20
)

// Entry-point kinds: what a case puts into the cluster.
const (
	kindCollector = "StatusCollector"
	kindPolicy    = "AggregationPolicy"
	kindStatus    = "WorkStatus"
)

// onlyCases selects the entry-point cases by name (a regular expression), to rerun one case.
var onlyCases = flag.String("hostile.entry", "", "run only the entry-point cases whose names match this regular expression")

// entryCase is a corpus case as the entry points see it.
type entryCase struct {
	Case
	kind string
	// name is the name of everything the case creates in the cluster (its collector or policy,
	// Widget, BindingPolicy, WorkStatuses). Later cases get smaller names, so that of the
	// policies for one kind the newest is the one in force (the smallest name wins).
	name string
	// object is the StatusCollector or AggregationPolicy the case submits (nil: none).
	object map[string]any
	// inController says whether the controller runs the case: a collector, a WorkStatus case,
	// or a policy for example.io/Widget.
	inController bool
}

// entryCases selects the corpus cases for the entry points: StatusCollectors, aggregation
// policies (checked alone or run over WECs), and reported statuses (Evaluation cases, and
// aggregations of example.io/Widget by the built-in generic module).
func entryCases(cases []Case) []entryCase {
	var out []entryCase
	for _, c := range cases {
		e := entryCase{Case: c}
		switch {
		case c.Kind == "StatusCollector":
			e.kind, e.object, e.inController = kindCollector, c.Object, true
		case c.Kind == "AggregationPolicy":
			e.kind, e.object = kindPolicy, c.Object
		case c.Kind == "Aggregation" && c.Policy != nil:
			e.kind, e.object, e.inController = kindPolicy, c.Policy, c.Target == "example.io/Widget"
		case c.Kind == "Evaluation", c.Kind == "Aggregation" && c.Target == "example.io/Widget":
			e.kind, e.inController = kindStatus, true
		default:
			continue
		}
		e.name = fmt.Sprintf("h%04d", 9999-len(out))
		if e.testsName() {
			e.name = ""
		}
		out = append(out, e)
	}
	return out
}

// testsName says whether the case is about the object's own name, which it then keeps.
func (e entryCase) testsName() bool {
	for _, w := range e.Expect.Errors {
		if w.Field == "metadata.name" {
			return true
		}
	}
	return false
}

// refusalExpected says whether the case must be refused at admission (true), may be (mayBe), or
// must be accepted.
func (e entryCase) refusalExpected() (must, mayBe bool) {
	return len(e.Expect.Errors) > 0, e.Expect.MayReject
}

// checkRefusal checks an admission outcome (the refusal's message, or "" for accepted) against
// the case.
func (e entryCase) checkRefusal(msg string, refused bool) error {
	if a := e.Expect.Admission; a != nil {
		switch {
		case refused && a.Accepted && a.Refused == "":
			return fmt.Errorf("refused, want accepted: %.600s", msg)
		case !refused && !a.Accepted:
			return fmt.Errorf("accepted, want refused with %q", a.Refused)
		case refused && !containsOneOf(msg, a.Refused):
			return fmt.Errorf("refused with %.600s; want %q", msg, a.Refused)
		}
		return nil
	}
	must, mayBe := e.refusalExpected()
	switch {
	case refused && !must && !mayBe:
		return fmt.Errorf("refused, want accepted: %.600s", msg)
	case !refused && must:
		return fmt.Errorf("accepted, want refused with %+v", e.Expect.Errors)
	case !refused:
		return nil
	}
	for _, w := range e.Expect.Errors {
		if !strings.Contains(msg, w.Field) || (w.Detail != "" && !containsOneOf(msg, w.Detail)) {
			return fmt.Errorf("refused with %.600s; want an error at %s containing %q", msg, w.Field, w.Detail)
		}
	}
	return nil
}

// worst is the worst time and memory one entry point reached, and over how many cases.
type worst struct {
	cases, refused      int
	time                time.Duration
	timeCase            string
	memory              uint64
	memoryCase          string
	byKind              map[string]int
	baseline, processes uint64
}

func (w *worst) add(c entryCase, refused bool, d time.Duration, mem uint64) {
	if w.byKind == nil {
		w.byKind = map[string]int{}
	}
	w.cases++
	w.byKind[c.kind]++
	if refused {
		w.refused++
	}
	if d > w.time {
		w.time, w.timeCase = d, c.Name
	}
	if mem > w.memory {
		w.memory, w.memoryCase = mem, c.Name
	}
}

func (w *worst) String() string {
	kinds := make([]string, 0, len(w.byKind))
	for k, n := range w.byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d cases (%s), %d refused; slowest %s (%s); memory at most +%d MiB above the baseline of %d MiB (%s)",
		w.cases, strings.Join(kinds, ", "), w.refused, w.time.Round(time.Millisecond), w.timeCase,
		w.memory>>20, w.baseline>>20, w.memoryCase)
}

// checkBounds fails t when a case took more than twice its limit or grew memory beyond entryHeap.
func checkBounds(t *testing.T, where string, d, limit time.Duration, mem uint64) {
	t.Helper()
	if d > 2*limit {
		t.Errorf("%s: took %s, more than twice its limit of %s", where, d.Round(time.Millisecond), limit)
	}
	if mem > entryHeap {
		t.Errorf("%s: memory grew by %d MiB, more than %d MiB", where, mem>>20, entryHeap>>20)
	}
}

// minEntryCases is the number of cases each entry point must run at least (unless
// -hostile.entry selects some).
var minEntryCases = 50

// TestEntryPoints runs the hostile StatusCollectors, aggregation policies and reported statuses
// through each entry point a user reaches them by: the admission webhooks of a running `statusfold
// manager` (over TLS, called by a real kube-apiserver), the manager's controllers (the accepted
// objects and the statuses as WorkStatuses), and the CLI (`statusfold validate`, `eval`,
// `aggregate`). Every case must be refused as the corpus says, or finish within twice its time
// limit, with the process's memory at most 256 MiB above its baseline; the log ends with the
// worst time and memory per entry point.
func TestEntryPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane and measures time: not with -short")
	}
	cases := entryCases(loadCorpus(t))
	if *onlyCases != "" {
		re := regexp.MustCompile(*onlyCases)
		cases = slices.DeleteFunc(cases, func(c entryCase) bool { return !re.MatchString(c.Name) })
		minEntryCases = 0
	}
	if len(cases) < minEntryCases || len(cases) == 0 {
		t.Fatalf("%d entry-point cases, want at least %d", len(cases), minEntryCases)
	}
	env := startEntryEnv(t)
	accepted := env.admission(t, cases)
	t.Logf("admission: %s", &env.admissionWorst)
	env.controller(t, cases, accepted)
	t.Logf("controller: %s", &env.controllerWorst)
	for _, r := range env.largeWrites {
		t.Logf("controller, large status: %s", r)
	}
	if !env.mgr.alive() {
		t.Fatalf("the manager exited (memory limit %s)", memoryLimit)
	}
	cli := runCLICases(t, cases)
	t.Logf("CLI: %s", cli)
	t.Logf("worst per entry point — admission: %s, +%d MiB; controller: %s, +%d MiB; CLI: %s, +%d MiB",
		env.admissionWorst.time.Round(time.Millisecond), env.admissionWorst.memory>>20,
		env.controllerWorst.time.Round(time.Millisecond), env.controllerWorst.memory>>20,
		cli.time.Round(time.Millisecond), cli.memory>>20)
}

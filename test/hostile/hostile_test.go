package hostile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/classifier"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/test/framework"
)

// minCases is the size the corpus must keep.
const minCases = 150

// hangAfter is how long a case may run before it counts as hung. It is a guard against endless
// loops, not a performance assertion: every case normally takes milliseconds, and the slowest (the
// runtime cost bombs) about 2 s, but above a minute under -race on a loaded 2-core machine. It
// stays above corpusTimeBudget and below make test's -timeout (40m).
const hangAfter = 15 * time.Minute

func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < minCases {
		t.Errorf("corpus has %d cases, want at least %d", len(cases), minCases)
	}
	agg, err := aggregation.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{compilers: map[time.Duration]*collector.Compiler{}, agg: agg}
	kinds := map[string]int{}
	for _, c := range cases {
		kinds[c.Kind]++
		t.Run(c.Name, func(t *testing.T) {
			// A case with a time budget measures wall time: it runs alone, before the parallel
			// cases start (Go runs parallel subtests after the loop), so that other cases do not
			// take its CPU (2 at a time, 10x slower under -race).
			if c.TimeBudget == "" {
				t.Parallel()
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s: panic: %v\n%s", c.file, p, debug.Stack())
					}
				}()
				r.run(t, c)
			}()
			select {
			case <-done:
			case <-time.After(hangAfter):
				t.Fatalf("%s: still running after %s", c.file, hangAfter)
			}
		})
	}
	t.Logf("%d hostile cases: %v", len(cases), kinds)
}

// corpusTimeBudget is the collectors' time budget in cases that set none: long enough that only
// the deterministic limits (cost, size) decide a case's outcome. One minute was not: under -race,
// with load average 12 on 2 cores, cel-runtime-cost-bomb-in-filter and -in-subject ran out of it
// before their cost limit (about 2 s each without -race).
const corpusTimeBudget = 10 * time.Minute

type runner struct {
	mu        sync.Mutex
	compilers map[time.Duration]*collector.Compiler // by time budget
	agg       *aggregation.Engine                   // built-in modules only
}

// compiler returns a compiler with the case's time budget.
func (r *runner) compiler(t *testing.T, c Case) *collector.Compiler {
	budget := corpusTimeBudget
	if c.TimeBudget != "" {
		d, err := time.ParseDuration(c.TimeBudget)
		if err != nil || d <= 0 {
			t.Fatalf("%s: timeBudget %q: want a positive Go duration", c.file, c.TimeBudget)
		}
		budget = d
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if comp, ok := r.compilers[budget]; ok {
		return comp
	}
	comp, err := collector.NewCompiler(collector.WithTimeBudget(budget))
	if err != nil {
		t.Fatal(err)
	}
	r.compilers[budget] = comp
	return comp
}

func (r *runner) run(t *testing.T, c Case) {
	switch c.Kind {
	case "StatusCollector":
		r.statusCollector(t, c)
	case "ContentClassifier":
		var cc controlv1alpha1.ContentClassifier
		if err := into(c.Object, &cc); err != nil {
			t.Fatalf("%s: object: %v", c.file, err)
		}
		checkErrors(t, classifier.Validate(&cc), c.Expect.Errors)
	case "Evaluation":
		r.evaluation(t, c)
	case "Prune":
		prune(t, c)
	case "AggregationPolicy":
		var p policyv1alpha1.AggregationPolicy
		if err := into(c.Object, &p); err != nil {
			t.Fatalf("%s: object: %v", c.file, err)
		}
		checkErrors(t, aggregation.ValidatePolicy(&p), c.Expect.Errors)
	case "Aggregation":
		r.aggregation(t, c)
	default:
		t.Fatalf("%s: unknown kind %q", c.file, c.Kind)
	}
}

func (r *runner) statusCollector(t *testing.T, c Case) {
	var sc controlv1alpha1.StatusCollector
	if err := into(c.Object, &sc); err != nil {
		t.Fatalf("%s: object: %v", c.file, err)
	}
	col, errs, _ := r.compiler(t, c).Compile(&sc)
	checkErrors(t, errs, c.Expect.Errors)
	if len(errs) > 0 {
		if col != nil {
			t.Errorf("Compile returned a collector together with errors")
		}
		return
	}
	if col == nil {
		t.Fatalf("Compile returned neither a collector nor errors")
	}
	// An accepted collector also runs over the case's WECs (or one that reported nothing).
	wecs := c.WECs
	if len(wecs) == 0 {
		wecs = []WECInput{{Name: "wec1"}}
	}
	res := collector.Evaluate(c.Workload, r.wecs(t, c, wecs, nil), []*collector.Collector{col})
	checkResults(t, res, []*collector.Collector{col}, c.Expect)
}

func (r *runner) evaluation(t *testing.T, c Case) {
	var cols []*collector.Collector
	for i, m := range c.Collectors {
		var sc controlv1alpha1.StatusCollector
		if err := into(m, &sc); err != nil {
			t.Fatalf("%s: collectors[%d]: %v", c.file, i, err)
		}
		col, errs, _ := r.compiler(t, c).Compile(&sc)
		if len(errs) > 0 {
			t.Fatalf("%s: collectors[%d] must compile for an Evaluation case: %v", c.file, i, errs)
		}
		cols = append(cols, col)
	}
	slices.SortFunc(cols, func(a, b *collector.Collector) int { return strings.Compare(a.Name(), b.Name()) })
	var pruner *classifier.Pruner
	if c.Classifier != nil {
		var cc controlv1alpha1.ContentClassifier
		if err := into(c.Classifier, &cc); err != nil {
			t.Fatalf("%s: classifier: %v", c.file, err)
		}
		pruner = classifier.NewPruner(&cc)
	}
	res := collector.Evaluate(c.Workload, r.wecs(t, c, c.WECs, pruner), cols)
	checkResults(t, res, cols, c.Expect)
}

// wecs turns the case's WEC inputs into engine inputs, through the pruner when there is one.
func (r *runner) wecs(t *testing.T, c Case, in []WECInput, p *classifier.Pruner) []collector.WEC {
	var out []collector.WEC
	ts := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, w := range in {
		status := w.Status
		if w.StatusJSON != "" {
			if err := json.Unmarshal([]byte(w.StatusJSON), &status); err != nil {
				t.Fatalf("%s: wec %s statusJSON: %v", c.file, w.Name, err)
			}
		}
		if p != nil && status != nil {
			status = p.Prune(status)
		}
		cw := collector.WEC{Name: w.Name, Labels: w.Labels, Status: status}
		if status != nil {
			cw.LastUpdate = &ts
		}
		out = append(out, cw)
	}
	return out
}

func prune(t *testing.T, c Case) {
	var cc controlv1alpha1.ContentClassifier
	if err := into(c.Classifier, &cc); err != nil {
		t.Fatalf("%s: classifier: %v", c.file, err)
	}
	if len(c.WECs) != 1 {
		t.Fatalf("%s: a Prune case has exactly one WEC", c.file)
	}
	in := c.WECs[0].Status
	before := framework.JSONRoundTrip(t, in)
	got := classifier.Prune(in, &cc)
	if !reflect.DeepEqual(framework.JSONRoundTrip(t, in), before) {
		t.Errorf("Prune modified its input")
	}
	if !reflect.DeepEqual(got, c.Expect.Pruned) {
		t.Errorf("Prune = %#v, want %#v", got, c.Expect.Pruned)
	}
}

// checkErrors requires every expected error to be among errs, and errs to be empty when none is
// expected. Every error must also print.
func checkErrors(t *testing.T, errs field.ErrorList, want []ExpectedError) {
	t.Helper()
	for _, e := range errs {
		if e.Error() == "" {
			t.Errorf("an error with an empty message: %#v", e)
		}
	}
	if len(want) == 0 {
		if len(errs) > 0 {
			t.Errorf("want no errors, got %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Errorf("want errors %+v, got none", want)
		return
	}
	for _, w := range want {
		found := slices.ContainsFunc(errs, func(e *field.Error) bool {
			return e.Field == w.Field && (w.Type == "" || e.Type.String() == w.Type) && containsOneOf(e.Detail, w.Detail)
		})
		if !found {
			t.Errorf("want an error at %s (%s) containing %q; got:\n%s", w.Field, w.Type, w.Detail, describe(errs))
		}
	}
}

func describe(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		d := e.Detail
		if len(d) > 300 {
			d = d[:300] + "…"
		}
		fmt.Fprintf(&b, "  %s (%s): %s\n", e.Field, e.Type, d)
	}
	return b.String()
}

// checkResults checks the invariants every CombinedStatus result obeys, then the case's
// expectations.
func checkResults(t *testing.T, res []controlv1alpha1.NamedStatusCombination, cols []*collector.Collector, want Expect) {
	t.Helper()
	if len(res) != len(cols) {
		t.Fatalf("%d results for %d collectors", len(res), len(cols))
	}
	byName := map[string]controlv1alpha1.NamedStatusCombination{}
	for i, r := range res {
		col := cols[i]
		byName[r.Name] = r
		if r.Name != col.Name() {
			t.Errorf("result %d is %q, want %q (ordered by collector name)", i, r.Name, col.Name())
		}
		if !slices.Equal(r.ColumnNames, col.ColumnNames()) {
			t.Errorf("%s: columns %v, want %v", r.Name, r.ColumnNames, col.ColumnNames())
		}
		if int64(len(r.Rows)) > col.Limit() {
			t.Errorf("%s: %d rows, limit %d", r.Name, len(r.Rows), col.Limit())
		}
		for j, row := range r.Rows {
			if len(row.Columns) != len(r.ColumnNames) {
				t.Errorf("%s: row %d has %d cells for %d columns", r.Name, j, len(row.Columns), len(r.ColumnNames))
			}
		}
		if len(r.RowErrors) > collector.MaxRowErrors {
			t.Errorf("%s: %d row errors, at most %d", r.Name, len(r.RowErrors), collector.MaxRowErrors)
		}
		// What goes into a CombinedStatus must encode as JSON.
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: result does not encode as JSON: %v", r.Name, err)
		}
	}
	for name, n := range want.Rows {
		if got := len(byName[name].Rows); got != n {
			t.Errorf("%s: %d rows, want %d", name, got, n)
		}
	}
	for _, w := range want.RowErrors {
		r := byName[w.Collector]
		if !slices.ContainsFunc(r.RowErrors, func(e controlv1alpha1.RowEvaluationError) bool {
			return e.WEC.ClusterId == w.WEC && e.ColumnName == w.Column && strings.Contains(e.Error, w.Contains)
		}) {
			t.Errorf("%s: want a row error for wec %q column %q containing %q; got %+v", w.Collector, w.WEC, w.Column, w.Contains, r.RowErrors)
		}
	}
	for _, w := range want.Cells {
		r := byName[w.Collector]
		col := slices.Index(r.ColumnNames, w.Column)
		if col < 0 || w.Row >= len(r.Rows) {
			t.Errorf("%s: no cell at row %d column %q in %+v", w.Collector, w.Row, w.Column, r)
			continue
		}
		var wantV controlv1alpha1.Value
		if err := into(w.Value, &wantV); err != nil {
			t.Fatalf("expected value: %v", err)
		}
		if got := r.Rows[w.Row].Columns[col]; !collector.ValuesEqual(got, wantV) {
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(wantV)
			t.Errorf("%s: row %d column %q = %s, want %s", w.Collector, w.Row, w.Column, gb, wb)
		}
	}
}

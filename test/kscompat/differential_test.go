package kscompat

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var reportPath = flag.String("kscompat.report", "", "write the differential's case-by-case comparison (markdown) to this file")

// setupCorpus creates the WECs, the corpus objects, the collectors and the WorkStatuses; the
// BindingPolicy is created by the caller once a binding controller runs.
func setupCorpus(t *testing.T, s *space) []*ksv1alpha1.StatusCollector {
	ctx := context.Background()
	for _, w := range corpusWECs {
		s.addWEC(w.name, map[string]string{"region": w.region, "kscompat": "corpus"})
	}
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corpusNamespace}})
	var collectors []*ksv1alpha1.StatusCollector
	for _, sc := range corpusCollectors() {
		if _, ok := kubestellarPanics[sc.Name]; ok {
			continue
		}
		s.create(sc)
		collectors = append(collectors, sc)
	}
	for _, o := range corpusObjects() {
		s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: corpusNamespace,
			Labels: map[string]string{"kscompat": "corpus"}}, Data: map[string]string{"tier": o.tier}})
		for _, wec := range sortedKeys(o.reports) {
			if err := s.report(ctx, wec, configMapRef(corpusNamespace, o.name), o.reports[wec]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return collectors
}

func corpusPolicy(collectors []*ksv1alpha1.StatusCollector) *ksv1alpha1.BindingPolicy {
	names := make([]string, len(collectors))
	for i, sc := range collectors {
		names[i] = sc.Name
	}
	return bindingPolicy("corpus", map[string]string{"kscompat": "corpus"}, "", "configmaps",
		map[string]string{"kscompat": "corpus"}, ksv1alpha1.DownsyncModulation{StatusCollectors: names})
}

// settledCombinedStatuses waits until every corpus object has a CombinedStatus with one result per
// collector and none of them has changed for quiet, then returns them.
func settledCombinedStatuses(t *testing.T, s *space, procs []*process, want int, quiet, timeout time.Duration) map[string]*ksv1alpha1.CombinedStatus {
	t.Helper()
	var last map[string]*ksv1alpha1.CombinedStatus
	var lastSig string
	var since time.Time
	changes := 0
	s.eventually("CombinedStatuses settle", timeout, procs, func(ctx context.Context) (bool, string) {
		css, err := s.combinedStatuses(ctx, corpusNamespace)
		if err != nil {
			return false, err.Error()
		}
		// KubeStellar rewrites a CombinedStatus whenever its rows come out in another order (they
		// come from Go map iteration), so "settled" means the same content, rows unordered.
		var sig []string
		for _, k := range sortedKeys(css) {
			sig = append(sig, k+"="+contentSignature(css[k]))
		}
		if len(css) != len(corpusObjects()) {
			return false, fmt.Sprintf("%d CombinedStatuses: %v", len(css), sortedKeys(css))
		}
		for _, k := range sortedKeys(css) {
			if len(css[k].Results) != want {
				return false, fmt.Sprintf("%s has %d results, want %d", k, len(css[k].Results), want)
			}
		}
		if joined := strings.Join(sig, " "); joined != lastSig {
			if lastSig != "" && changes < 5 {
				t.Logf("content changed after %s: %s", time.Since(since).Round(time.Millisecond), firstDifference(lastSig, joined))
			}
			changes++
			last, lastSig, since = css, joined, time.Now()
			return false, "changed"
		}
		return time.Since(since) >= quiet, "settling"
	})
	return last
}

// kubestellarPanics are the corpus collectors that KubeStellar v0.30.0's status controller cannot
// evaluate: it panics and the controller-manager exits. They are left out of the differential.
var kubestellarPanics = map[string]string{
	"a-by-object": "groupBy value is a map: handleAggregationReadLocked uses it as a Go map key (hash of unhashable type)",
	"a-by-list":   "groupBy value is a list: handleAggregationReadLocked uses it as a Go map key (hash of unhashable type []interface {})",
}

// The departures in what is computed (docs/kubestellar.md, "Departures"), by reason; a case of the
// corpus ("object/collector") that differs after representation() must be listed, and a listed
// case must still differ.
const (
	depLimit     = "limit: KubeStellar returns every row; statusfold at most `limit` (docs/rules.md, Collectors)"
	depFilter    = "filter: KubeStellar keeps a row whose filter is null, not a bool, or fails; statusfold drops it (docs/rules.md, Collectors)"
	depOneRow    = "no groupBy: KubeStellar writes no row when every row failed (or no WEC reported); statusfold always exactly one (COUNT 0, SUM 0, AVG NaN, MIN +Inf, MAX −Inf; docs/rules.md, Collectors)"
	depAvg       = "AVG: KubeStellar divides by the rows without errors, nulls included; statusfold by the values used (docs/rules.md, Collectors)"
	depTimestamp = "propagation.lastReturnedUpdateTimestamp of a WEC that reported nothing: KubeStellar 1970-01-01T00:00:00Z (no WorkStatus) or 0001-01-01T00:00:00Z (no .status); statusfold: absent, so a row error and Null (docs/rules.md, Collectors)"
)

func departures() map[string]string {
	d := map[string]string{}
	for _, o := range []string{"o-full", "o-partial", "o-missing", "o-strings", "o-none", "o-nullish", "o-mixed"} {
		d[o+"/s-limit"] = depLimit
		d[o+"/s-flag"] = depFilter
		d[o+"/a-filter-fail"] = depOneRow
	}
	for _, o := range []string{"o-full", "o-partial", "o-missing", "o-strings", "o-nullish", "o-mixed"} {
		d[o+"/a-limit"] = depLimit
	}
	for _, c := range []string{"a-all", "a-avg", "a-bad", "a-double", "a-filter", "a-max", "a-min", "a-none", "a-strings", "a-sum"} {
		d["o-none/"+c] = depOneRow
	}
	for _, o := range []string{"o-none", "o-partial", "o-nullish"} {
		d[o+"/s-filter"] = depFilter
	}
	d["o-partial/a-none"], d["o-nullish/a-none"] = depOneRow, depOneRow
	d["o-nullish/a-avg"], d["o-nullish/a-all"] = depAvg, depAvg
	d["o-nullish/s-time"], d["o-none/s-time"], d["o-partial/s-time"] = depTimestamp, depTimestamp, depTimestamp
	return d
}

// TestDifferential runs KubeStellar's controller-manager (--controllers=binding,status) and then
// statusfold (beside KubeStellar's binding controller) on the same objects, Bindings and
// WorkStatuses on one apiserver, and compares every (object, collector) result as KubeStellar's own
// statusCombinationEqual does, after decoding both sides with KubeStellar's Go types.
//
// The two controllers cannot own the same CombinedStatus names at once, so they run one after the
// other: KubeStellar's status controller writes, its output is read, it is killed and its
// CombinedStatuses are deleted; then statusfold writes from the same Bindings (which KubeStellar's
// binding controller keeps writing in both phases). Both run under KubeStellar's CRDs, which its
// controller-manager installs at startup: statusfold prunes its writes to the served schema
// (docs/kubestellar.md).
func TestDifferential(t *testing.T) {
	s := startSpace(t)
	collectors := setupCorpus(t, s)
	ctx := context.Background()

	ks := s.startKubeStellar("binding,status")
	s.create(corpusPolicy(collectors))
	start := time.Now()
	ksOut := settledCombinedStatuses(t, s, []*process{ks}, len(collectors), 7*time.Second, 3*time.Minute)
	t.Logf("KubeStellar: %d CombinedStatuses settled after %s", len(ksOut), time.Since(start).Round(time.Millisecond))
	ks.stop()

	if err := s.c.DeleteAllOf(ctx, &ksv1alpha1.CombinedStatus{}, client.InNamespace(corpusNamespace)); err != nil {
		t.Fatal(err)
	}
	s.eventually("KubeStellar's CombinedStatuses are gone", time.Minute, nil, func(ctx context.Context) (bool, string) {
		css, err := s.combinedStatuses(ctx, corpusNamespace)
		return err == nil && len(css) == 0, fmt.Sprintf("%d left (%v)", len(css), err)
	})

	ksb := s.startKubeStellar("binding")
	s.waitForLog(ksb, `"Starting controller" logger="setup" name="Binding"`, time.Minute)
	sf := s.startStatusfold()
	start = time.Now()
	sfOut := settledCombinedStatuses(t, s, []*process{ksb, sf}, len(collectors), 3*time.Second, 3*time.Minute)
	t.Logf("statusfold: %d CombinedStatuses settled after %s", len(sfOut), time.Since(start).Round(time.Millisecond))

	if err := s.strictlyKubeStellar(ctx, corpusNamespace); err != nil {
		t.Error(err)
	}
	compareCorpus(t, ksOut, sfOut)
}

func compareCorpus(t *testing.T, ksOut, sfOut map[string]*ksv1alpha1.CombinedStatus) {
	t.Helper()
	var report strings.Builder
	report.WriteString("| object | collector | KubeStellar | statusfold | errors |\n|---|---|---|---|---|\n")
	agree, agreeRepr, total, errDiffs := 0, 0, 0, 0
	known := departures()
	departed := map[string]bool{}
	for _, key := range sortedKeys(ksOut) {
		ksCS, sfCS := ksOut[key], sfOut[key]
		if sfCS == nil {
			t.Errorf("%s: statusfold wrote no CombinedStatus", key)
			continue
		}
		if ksCS.Name != sfCS.Name {
			t.Errorf("%s: CombinedStatus name KubeStellar %s, statusfold %s", key, ksCS.Name, sfCS.Name)
		}
		sfByName := map[string]*ksv1alpha1.NamedStatusCombination{}
		for i := range sfCS.Results {
			sfByName[sfCS.Results[i].Name] = &sfCS.Results[i]
		}
		for i := range ksCS.Results {
			ksR := &ksCS.Results[i]
			sfR := sfByName[ksR.Name]
			total++
			obj := strings.SplitN(key, "/", 2)[0]
			if sfR == nil {
				t.Errorf("%s: statusfold has no result %s", key, ksR.Name)
				continue
			}
			eq := statusCombinationEqual(ksR, sfR)
			eqRepr := statusCombinationEqual(representation(ksR), sfR)
			ed := errorsDiff(ksR, sfR)
			if ed != "" {
				errDiffs++
			}
			if eq {
				agree++
			}
			if eqRepr {
				agreeRepr++
			}
			if eq && ed == "" {
				continue
			}
			fmt.Fprintf(&report, "| %s | %s | %s | %s | %s |\n", obj, ksR.Name, mdEscape(rowsText(ksR)), mdEscape(rowsText(sfR)), mdEscape(ed))
			if eqRepr {
				continue
			}
			c := obj + "/" + ksR.Name
			if reason, ok := known[c]; ok {
				departed[c] = true
				t.Logf("departure %s (%s):\n  KubeStellar %s\n  statusfold  %s", c, reason, rowsText(ksR), rowsText(sfR))
				continue
			}
			t.Errorf("%s differs:\n  KubeStellar %s\n  statusfold  %s", c, rowsText(ksR), rowsText(sfR))
		}
	}
	byReason := map[string]int{}
	for c, reason := range known {
		if !departed[c] {
			t.Errorf("departure listed for %s (%s) but the case agrees: remove it from departures() and docs/kubestellar.md", c, reason)
		}
		byReason[reason]++
	}
	t.Logf("differential: %d of %d cases agree as KubeStellar's statusCombinationEqual compares them; %d once its value representation is mapped to docs/rules.md, Wire format and Collectors; the other %d are listed departures %v; %d differ in which cells have row or aggregation errors",
		agree, total, agreeRepr, total-agreeRepr, byReason, errDiffs)
	if total < 200 {
		t.Errorf("only %d cases compared, want at least 200", total)
	}
	if *reportPath != "" {
		fmt.Fprintf(&report, "\n%d of %d cases agree; %d after representation(); %d differ in their error cells.\n", agree, total, agreeRepr, errDiffs)
		if err := os.WriteFile(*reportPath, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// firstDifference shows where two signatures start to differ.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("…%s… became …%s…", a[from:min(len(a), i+200)], b[from:min(len(b), i+200)])
}

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/statusfold/statusfold/test/framework"
)

// checkMonitoringQueriesExported: every metric that the chart's Grafana dashboard and
// PrometheusRule query is exported on the manager's /metrics, with every label they select on
// (except namespace, which Prometheus adds when it scrapes), so they cannot drift apart.
func checkMonitoringQueriesExported(t *testing.T, url string) {
	t.Helper()
	queried := monitoringMetrics(t)
	if len(queried) < 5 {
		t.Fatalf("found only %v in the dashboard and alerts", queried)
	}
	eventually(t, "dashboard and alert metrics on /metrics", func() error {
		body, err := httpGet(url)
		if err != nil {
			return err
		}
		exported := exportedLabels(body)
		var missing []string
		for name, labelNames := range queried {
			have, ok := exported[name]
			if !ok {
				missing = append(missing, name)
				continue
			}
			for l := range labelNames {
				if l != "namespace" && !have[l] {
					missing = append(missing, name+" label "+l)
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("not exported: %v", missing)
		}
		return nil
	})
	t.Logf("%d metrics queried by the dashboard and alerts, all exported with their labels: %v", len(queried), keys(queried))
}

// monitoringMetrics returns the metrics (with the label names their selectors use) in the
// PromQL of files/dashboard.json and of the rendered PrometheusRule.
func monitoringMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	rules, err := framework.Helm(context.Background(), t, "", "template", "statusfold", framework.ChartDir(),
		"--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dashboard := readFileString(t, filepath.Join(framework.ChartDir(), "files", "dashboard.json"))
	var exprs []string
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(dashboard), &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, line := range strings.Split(rules, "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr: "); ok {
			exprs = append(exprs, e)
		}
	}
	out := map[string]map[string]bool{}
	for _, e := range exprs {
		for name, labelNames := range promSelectors(e) {
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			for _, l := range labelNames {
				out[name][l] = true
			}
		}
	}
	return out
}

// promSelectors returns the metric names in a PromQL expression — identifiers followed by a
// selector `{…}` (every query here selects by label) — with the label names in the selectors.
func promSelectors(expr string) map[string][]string {
	out := map[string][]string{}
	for i := 0; i < len(expr); i++ {
		if expr[i] != '{' {
			continue
		}
		j := i
		for j > 0 && isIdent(expr[j-1]) {
			j--
		}
		end := strings.IndexByte(expr[i:], '}')
		if j == i || end < 0 {
			continue
		}
		name := expr[j:i]
		out[name] = append(out[name], labelNames(expr[i+1:i+end])...)
	}
	return out
}

// labelNames returns the names in `a="x", b=~"y"` (PromQL matchers) or `a="x",b="y"` (the
// exposition format); values are quoted and may hold commas and escaped quotes.
func labelNames(s string) []string {
	var names []string
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		j := i
		for j < len(s) && isIdent(s[j]) {
			j++
		}
		if j == i {
			break
		}
		names = append(names, s[i:j])
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			break
		}
		k := j + q + 1
		for k < len(s) && s[k] != '"' {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		i = k + 1
	}
	return names
}

// exportedLabels reads a Prometheus text exposition: metric name → its label names.
func exportedLabels(body string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			continue
		}
		name := line[:end]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		if line[end] == '{' {
			if close := strings.LastIndexByte(line, '}'); close > end {
				for _, l := range labelNames(line[end+1 : close]) {
					out[name][l] = true
				}
			}
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func isIdent(b byte) bool {
	return b == '_' || b == ':' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

func readFileString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPromSelectors(t *testing.T) {
	got := promSelectors(`histogram_quantile(0.99, sum by (le) (rate(a_bucket{namespace="x", where=~"a,b\"c"}[5m]))) > 0 and b{c!="d"} / c{}`)
	want := map[string][]string{"a_bucket": {"namespace", "where"}, "b": {"c"}, "c": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("promSelectors = %v, want %v", got, want)
	}
	exp := exportedLabels("# HELP x y\nx_total{kind=\"a,b\",what=\"c\"} 1\nup 1\n")
	if !exp["x_total"]["kind"] || !exp["x_total"]["what"] || exp["up"] == nil || len(exp) != 2 {
		t.Errorf("exportedLabels = %v", exp)
	}
}

package load

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RequestCount is what the apiserver served for one kind of request over a phase: a verb on a
// resource (group/resource[/subresource]), from its own metrics.
type RequestCount struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Count is the number of requests; Seconds their summed handling time (latency, not CPU:
	// the share of the apiserver's work a kind of request takes).
	Count   float64 `json:"count"`
	Seconds float64 `json:"seconds"`
	// PerUpdate is Count divided by the phase's updates.
	PerUpdate float64 `json:"perUpdate"`
}

// requestSnapshot is the apiserver's request counters at one time, by verb and resource.
type requestSnapshot map[[2]string]RequestCount

// apiRequests reads the apiserver's request counters (apiserver_request_total and
// apiserver_request_duration_seconds) before and after a phase.
type apiRequests struct {
	cs     kubernetes.Interface
	before requestSnapshot
}

// startRequests takes the first snapshot; nil config: not measured.
func startRequests(ctx context.Context, cfg *rest.Config) (*apiRequests, error) {
	if cfg == nil {
		return nil, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &apiRequests{cs: cs}
	r.before, err = r.snapshot(ctx)
	return r, err
}

func (r *apiRequests) snapshot(ctx context.Context) (requestSnapshot, error) {
	b, err := apiserverMetrics(ctx, r.cs)
	if err != nil {
		return nil, err
	}
	return parseRequests(b)
}

// apiserverMetrics reads the apiserver's /metrics.
func apiserverMetrics(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Timeout(30 * time.Second).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver metrics: %w", err)
	}
	return b, nil
}

// metricFamilies parses metrics in the text format.
func metricFamilies(text []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("apiserver metrics: %w", err)
	}
	return fams, nil
}

// parseRequests sums the apiserver's request counters by verb and resource.
func parseRequests(text []byte) (requestSnapshot, error) {
	fams, err := metricFamilies(text)
	if err != nil {
		return nil, err
	}
	out := requestSnapshot{}
	key := func(labels map[string]string) [2]string {
		res := labels["resource"]
		if g := labels["group"]; g != "" {
			res = g + "/" + res
		}
		if s := labels["subresource"]; s != "" {
			res += "/" + s
		}
		return [2]string{labels["verb"], res}
	}
	labels := func(m *dto.Metric) map[string]string {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		return l
	}
	add := func(family string, value func(*dto.Metric, *RequestCount)) {
		for _, m := range fams[family].GetMetric() {
			k := key(labels(m))
			c := out[k]
			c.Verb, c.Resource = k[0], k[1]
			value(m, &c)
			out[k] = c
		}
	}
	add("apiserver_request_total", func(m *dto.Metric, c *RequestCount) { c.Count += m.GetCounter().GetValue() })
	// The watch cache's periodic consistency checks (each lists the whole resource from the
	// cache and from etcd), shown as a verb of their own: one during a phase explains a slow
	// period of the apiserver (docs/performance.md).
	for _, m := range fams["apiserver_storage_consistency_checks_total"].GetMetric() {
		l := labels(m)
		k := key(map[string]string{"verb": "CHECK", "group": l["group"], "resource": l["resource"]})
		c := out[k]
		c.Verb, c.Resource = k[0], k[1]
		c.Count += m.GetCounter().GetValue()
		out[k] = c
	}
	add("apiserver_request_duration_seconds", func(m *dto.Metric, c *RequestCount) { c.Seconds += m.GetHistogram().GetSampleSum() })
	return out, nil
}

// since returns the requests made since the first snapshot, most time first, WATCH left out (a
// watch's duration is its lifetime), n updates dividing the counts.
func (r *apiRequests) since(ctx context.Context, n int) ([]RequestCount, error) {
	if r == nil {
		return nil, nil
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return diffRequests(r.before, after, n), nil
}

func diffRequests(before, after requestSnapshot, n int) []RequestCount {
	var out []RequestCount
	for k, a := range after {
		if strings.EqualFold(k[0], "WATCH") {
			continue
		}
		b := before[k]
		d := RequestCount{Verb: k[0], Resource: k[1], Count: a.Count - b.Count, Seconds: a.Seconds - b.Seconds}
		if d.Count <= 0 {
			continue
		}
		if n > 0 {
			d.PerUpdate = d.Count / float64(n)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seconds != out[j].Seconds {
			return out[i].Seconds > out[j].Seconds
		}
		return out[i].Verb+out[i].Resource < out[j].Verb+out[j].Resource
	})
	return out
}

// formatRequests is the first n request kinds, one per line.
func formatRequests(rs []RequestCount, n int) string {
	var b strings.Builder
	for i, r := range rs {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "\n  %-7s %-55s %8.0f (%.3f/update) %8.2f s", r.Verb, r.Resource, r.Count, r.PerUpdate, r.Seconds)
	}
	return b.String()
}

// apiserverAllocated reads the bytes the apiserver's Go runtime has allocated since it started
// (go_memstats_alloc_bytes_total): the difference over a phase is the garbage its requests made.
func apiserverAllocated(ctx context.Context, cs kubernetes.Interface) (float64, error) {
	b, err := apiserverMetrics(ctx, cs)
	if err != nil {
		return 0, err
	}
	fams, err := metricFamilies(b)
	if err != nil {
		return 0, err
	}
	ms := fams["go_memstats_alloc_bytes_total"].GetMetric()
	if len(ms) != 1 {
		return 0, fmt.Errorf("apiserver metrics: %d go_memstats_alloc_bytes_total samples, want 1", len(ms))
	}
	return ms[0].GetCounter().GetValue(), nil
}

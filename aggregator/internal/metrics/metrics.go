package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// Metrics are statusfold's Prometheus metrics, registered with controller-runtime's registry
// (served on the manager's metrics endpoint). Queue depth and latency come from the work queues.
type Metrics struct {
	Evaluations *prometheus.CounterVec   // kind: object, policy
	Rows        prometheus.Histogram     // rows per CombinedStatus result
	Errors      *prometheus.CounterVec   // where: reconcile, collector, classifier, aggregation, policy
	Writes      *prometheus.CounterVec   // what: combinedstatus, status, label, binding, ...; op: apply, delete
	Latency     prometheus.Histogram     // WorkStatus event → write
	Durations   *prometheus.HistogramVec // kind: combinedstatus, status (the Pacer's kinds of write)
	Conflicts   prometheus.Counter       // status applies refused because another manager owns a field
	Dropped     *prometheus.CounterVec   // reason: schema (returned status), served-schema (our control.kubestellar.io writes)
	Echoes      *prometheus.CounterVec   // what: combinedstatus, status, binding — watch events of statusfold's own writes, not evaluated

	// Trimmed counts writes made smaller to fit the object size budget, by kind (combinedstatus,
	// status): docs/rules.md "Size budget".
	Trimmed *prometheus.CounterVec
	// OversizeReports counts WorkStatus versions whose reported status is over the size cap.
	OversizeReports prometheus.Counter

	// AggregationPoliciesSuperseded is the number of valid AggregationPolicies not in force because
	// another valid policy for their kind has a smaller name (docs/aggregation.md).
	AggregationPoliciesSuperseded prometheus.Gauge

	// pacers are the running managers' Pacers (one per manager; several in tests), read by
	// statusfold_write_delay_seconds.
	pacersMu sync.Mutex
	pacers   map[*pacing.Pacer[rules.ObjectKey]]struct{}
}

// errorPlaces are the values of statusfold_errors_total's "where" label (docs/controller.md).
var errorPlaces = []string{"reconcile", "panic", "write", "watch", "schema", "collector", "classifier", "aggregation",
	"aggregationpolicy", "workstatus", "invalid-status", "status-not-returned", "discovery",
	"lua-health"}

var (
	metricsOnce sync.Once
	theMetrics  *Metrics
)

// New returns the process-wide metrics (registering them once: several managers in one
// process, as in tests, share them).
func New() *Metrics {
	metricsOnce.Do(func() {
		m := &Metrics{
			Evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "statusfold_evaluations_total", Help: "Evaluations, by kind of work item (object, policy, kind).",
			}, []string{"kind"}),
			Rows: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name: "statusfold_combinedstatus_rows", Help: "Rows per CombinedStatus result, at each evaluation.",
				Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 1000},
			}),
			Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "statusfold_errors_total", Help: "Errors, by where they happened.",
			}, []string{"where"}),
			Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "statusfold_writes_total", Help: "Writes to the apiserver, by object kind and operation.",
			}, []string{"what", "op"}),
			Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name:    "statusfold_workstatus_to_write_seconds",
				Help:    "Time from a WorkStatus event to the CombinedStatus or status write it caused.",
				Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
			}),
			Durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "statusfold_write_duration_seconds",
				Help:    "Duration of the paced writes made for workload objects, by kind (combinedstatus, status): the latencies the Pacer reads.",
				Buckets: prometheus.ExponentialBuckets(0.0025, 2, 12),
			}, []string{"kind"}),
			Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "statusfold_status_conflicts_total", Help: "Status returns not written because another field manager owns a field.",
			}),
			Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "statusfold_status_fields_dropped_total",
				Help: "Fields not written, by reason (schema: returned status fields that the WDS's schema of the kind does not declare; " +
					"served-schema: fields of statusfold's writes to control.kubestellar.io objects that the served CRD does not declare, as under KubeStellar's own CRDs).",
			}, []string{"reason"}),
			Echoes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "statusfold_own_write_echoes_total",
				Help: "Watch events recognised as the echo of statusfold's own write, and so not evaluated, by what was written (combinedstatus, status, binding).",
			}, []string{"what"}),
		}
		m.Trimmed = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "statusfold_trimmed_total",
			Help: "Writes trimmed to fit the object size budget (rows of a CombinedStatus, list entries of a returned status, or a returned status not written), by kind (combinedstatus, status).",
		}, []string{"kind"})
		m.Trimmed.WithLabelValues("combinedstatus")
		m.Trimmed.WithLabelValues("status")
		// Every error series exists from the start, at 0: alerts and dashboards on
		// statusfold_errors_total (charts/statusfold) see a rate of 0, not an absent metric.
		for _, where := range errorPlaces {
			m.Errors.WithLabelValues(where)
		}
		for k := range pacing.WriteKinds {
			m.Durations.WithLabelValues(k.String())
		}
		m.Dropped.WithLabelValues("schema")
		m.Dropped.WithLabelValues("served-schema")
		m.pacers = map[*pacing.Pacer[rules.ObjectKey]]struct{}{}
		writeDelay := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "statusfold_write_delay_seconds",
			Help: "The Pacer's current delay between two writes of one workload object (0: writes at once; at most --max-write-delay).",
		}, m.writeDelay)
		ctrlmetrics.Registry.MustRegister(m.Evaluations, m.Rows, m.Errors, m.Writes, m.Latency, m.Durations, m.Conflicts, m.Dropped, m.Echoes, writeDelay,
			m.Trimmed)
		m.OversizeReports = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "statusfold_oversize_reports_total",
			Help: "WorkStatus updates whose reported status is over --max-reported-status-bytes (not evaluated; the WEC's rows say so).",
		})
		ctrlmetrics.Registry.MustRegister(m.OversizeReports)
		m.AggregationPoliciesSuperseded = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "statusfold_aggregation_policies_superseded",
			Help: "Valid AggregationPolicies not in force because another valid policy for their kind has a smaller name (their InForce condition is False, reason Superseded).",
		})
		ctrlmetrics.Registry.MustRegister(m.AggregationPoliciesSuperseded)
		theMetrics = m
	})
	return theMetrics
}

// AddPacer makes p's delay part of statusfold_write_delay_seconds until remove is called.
func (m *Metrics) AddPacer(p *pacing.Pacer[rules.ObjectKey]) (remove func()) {
	m.pacersMu.Lock()
	defer m.pacersMu.Unlock()
	m.pacers[p] = struct{}{}
	return func() {
		m.pacersMu.Lock()
		defer m.pacersMu.Unlock()
		delete(m.pacers, p)
	}
}

// writeDelay is the largest current delay of the running Pacers, in seconds (0: none).
func (m *Metrics) writeDelay() float64 {
	m.pacersMu.Lock()
	defer m.pacersMu.Unlock()
	now := time.Now()
	d := time.Duration(0)
	for p := range m.pacers {
		d = max(d, p.State(now).Delay)
	}
	return d.Seconds()
}

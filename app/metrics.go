package app

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's Prometheus metrics, in a registry of their own
// (one per server, so tests and several servers in a process never clash).
// It implements ghapp.APIMetrics for the GitHub client.
type Metrics struct {
	reg *prometheus.Registry

	received   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	duplicate  *prometheus.CounterVec
	ackSeconds prometheus.Histogram
	jobSeconds *prometheus.HistogramVec
	checkSecs  *prometheus.HistogramVec
	apiCalls   *prometheus.CounterVec
	rateLeft   *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers Go and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogbot_webhook_deliveries_received_total",
			Help: "Verified webhook deliveries stored, by event.",
		}, []string{"event"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogbot_webhook_deliveries_rejected_total",
			Help: "Webhook deliveries refused, by reason (signature, too_large, bad_request, store).",
		}, []string{"reason"}),
		duplicate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogbot_webhook_deliveries_duplicate_total",
			Help: "Webhook deliveries whose X-GitHub-Delivery was already stored (redeliveries), by event.",
		}, []string{"event"}),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "catalogbot_webhook_ack_seconds",
			Help:    "Time from request to acknowledgement of a stored delivery.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		jobSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "catalogbot_job_duration_seconds",
			Help:    "Job durations by kind and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, []string{"kind", "outcome"}),
		checkSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "catalogbot_check_duration_seconds",
			Help:    "Durations of each check by conclusion.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"check", "conclusion"}),
		apiCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogbot_github_api_calls_total",
			Help: "GitHub API calls by endpoint and HTTP status.",
		}, []string{"endpoint", "status"}),
		rateLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "catalogbot_github_rate_limit_remaining",
			Help: "GitHub API requests left in the current window, by installation.",
		}, []string{"installation"}),
	}
	m.reg.MustRegister(m.received, m.rejected, m.duplicate, m.ackSeconds, m.jobSeconds, m.checkSecs,
		m.apiCalls, m.rateLeft, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// setBuildInfo exports catalogbot_build_info{version, revision, goversion} = 1, the usual way to see
// which build each replica runs.
func (m *Metrics) setBuildInfo(version, revision string) {
	if version == "" {
		version = "unknown"
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "catalogbot_build_info",
		Help: "The running build: version, VCS revision and Go version (always 1).",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(version, revision, runtime.Version()).Set(1)
	m.reg.MustRegister(g)
}

// Registry is the server's registry (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// APICall counts one GitHub API call (ghapp.APIMetrics).
func (m *Metrics) APICall(endpoint string, status int) {
	m.apiCalls.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
}

// RateLimitRemaining records the rate limit left for an installation (ghapp.APIMetrics).
func (m *Metrics) RateLimitRemaining(installationID int64, remaining int) {
	m.rateLeft.WithLabelValues(strconv.FormatInt(installationID, 10)).Set(float64(remaining))
}

// DeliveryReceived, DeliveryRejected, DeliveryDuplicate and Ack count the webhook's deliveries (intake.Metrics).
func (m *Metrics) DeliveryReceived(event string)  { m.received.WithLabelValues(event).Inc() }
func (m *Metrics) DeliveryRejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }
func (m *Metrics) DeliveryDuplicate(event string) { m.duplicate.WithLabelValues(event).Inc() }
func (m *Metrics) Ack(d time.Duration)            { m.ackSeconds.Observe(d.Seconds()) }

// ObserveJob records one job's duration.
func (m *Metrics) ObserveJob(kind, outcome string, d time.Duration) {
	m.jobSeconds.WithLabelValues(kind, outcome).Observe(d.Seconds())
}

// ObserveCheck records one check's duration.
func (m *Metrics) ObserveCheck(check, conclusion string, d time.Duration) {
	m.checkSecs.WithLabelValues(check, conclusion).Observe(d.Seconds())
}

// queueCollector reads the backlog from the database at each scrape.
type queueCollector struct {
	q     *store.Queue
	log   *slog.Logger
	depth *prometheus.Desc
	age   *prometheus.Desc
}

func (m *Metrics) registerQueue(q *store.Queue, log *slog.Logger) {
	m.reg.MustRegister(&queueCollector{q: q, log: log,
		depth: prometheus.NewDesc("catalogbot_queue_depth", "Jobs not finished yet (waiting, scheduled, retrying or running).", nil, nil),
		age:   prometheus.NewDesc("catalogbot_queue_oldest_available_seconds", "How long the oldest job ready to run has waited.", nil, nil),
	})
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.age }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := c.q.Stats(ctx)
	if err != nil {
		c.log.Warn("reading queue statistics", "err", err)
		ch <- prometheus.NewInvalidMetric(c.depth, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Depth))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, s.OldestAvailable.Seconds())
}

// cacheCollector reads the parse cache's and the layer cache's counters at
// each scrape: a low hit ratio on an App that checks one repository says the
// budget is too small for its catalogs.
type cacheCollector struct {
	parse           *load.ParseCache
	index           *load.SummaryIndex    // nil when not kept
	layers          *image.LayerCache     // nil without the rebuild
	lines           *checks.LineDiffCache // nil when not kept
	lineLookups     *prometheus.Desc
	lookups, bytes  *prometheus.Desc
	indexLookups    *prometheus.Desc
	indexEntries    *prometheus.Desc
	layerLookups    *prometheus.Desc
	parseBudgetDesc *prometheus.Desc
}

func (m *Metrics) registerCaches(parse *load.ParseCache, index *load.SummaryIndex, lines *checks.LineDiffCache, layers *image.LayerCache) {
	if parse == nil {
		return
	}
	m.reg.MustRegister(&cacheCollector{parse: parse, index: index, lines: lines, layers: layers,
		lineLookups:     prometheus.NewDesc("catalogbot_line_diff_cache_lookups_total", "Changed files whose changed lines were looked up by their pair of git blobs, by result (hit: neither blob was read again).", []string{"result"}, nil),
		indexLookups:    prometheus.NewDesc("catalogbot_file_index_lookups_total", "Unchanged catalog files looked up in the file summary index by git blob, by result (hit: the file was neither read nor parsed to learn its packages).", []string{"result"}, nil),
		indexEntries:    prometheus.NewDesc("catalogbot_file_index_entries", "File summaries the index holds.", nil, nil),
		lookups:         prometheus.NewDesc("catalogbot_parse_cache_lookups_total", "Catalog files looked up in the parse cache by git blob, by result (hit or miss).", []string{"result"}, nil),
		bytes:           prometheus.NewDesc("catalogbot_parse_cache_bytes", "Estimated bytes of parsed catalog files the parse cache holds.", nil, nil),
		parseBudgetDesc: prometheus.NewDesc("catalogbot_parse_cache_budget_bytes", "The parse cache's budget.", nil, nil),
		layerLookups:    prometheus.NewDesc("catalogbot_layer_cache_lookups_total", "Catalog image layers looked up by content before a build, by result (hit: the layer of an unchanged catalog reused).", []string{"result"}, nil),
	})
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lookups
	ch <- c.bytes
	ch <- c.parseBudgetDesc
	ch <- c.layerLookups
	ch <- c.indexLookups
	ch <- c.indexEntries
	ch <- c.lineLookups
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	hits, misses := c.parse.Stats()
	used, budget := c.parse.Size()
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(hits), "hit")
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(misses), "miss")
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(used))
	ch <- prometheus.MustNewConstMetric(c.parseBudgetDesc, prometheus.GaugeValue, float64(budget))
	if c.index != nil {
		hits, misses := c.index.Stats()
		ch <- prometheus.MustNewConstMetric(c.indexLookups, prometheus.CounterValue, float64(hits), "hit")
		ch <- prometheus.MustNewConstMetric(c.indexLookups, prometheus.CounterValue, float64(misses), "miss")
		ch <- prometheus.MustNewConstMetric(c.indexEntries, prometheus.GaugeValue, float64(c.index.Len()))
	}
	if c.lines != nil {
		hits, misses, _ := c.lines.Stats()
		ch <- prometheus.MustNewConstMetric(c.lineLookups, prometheus.CounterValue, float64(hits), "hit")
		ch <- prometheus.MustNewConstMetric(c.lineLookups, prometheus.CounterValue, float64(misses), "miss")
	}
	if c.layers != nil {
		hits, misses := c.layers.Stats()
		ch <- prometheus.MustNewConstMetric(c.layerLookups, prometheus.CounterValue, float64(hits), "hit")
		ch <- prometheus.MustNewConstMetric(c.layerLookups, prometheus.CounterValue, float64(misses), "miss")
	}
}

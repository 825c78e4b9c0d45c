// Package telemetry is gw's operator view: Prometheus metrics, OpenTelemetry
// traces, the request id and the access log line (docs/operations.md).
//
// Label values are bounded by construction: endpoints, outcomes, statuses and
// routes are gw's own vocabulary, models and providers come from the admitted
// catalog (a model the caller named but gw does not know is never a label),
// and organizations are the instance's own. Key, user and request ids are
// never labels: they belong in the access log and in traces.
package telemetry

import (
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Inference outcomes (the outcome label of gw_inference_requests_total).
const (
	OutcomeOK              = "ok"
	OutcomeUpstreamError   = "upstream_error"
	OutcomeDeniedPolicy    = "denied_policy"
	OutcomeDeniedBudget    = "denied_budget"
	OutcomeDeniedRateLimit = "denied_rate_limit"
	OutcomeInvalidRequest  = "invalid_request"
	OutcomeUnauthorized    = "unauthorized"
	OutcomeClientGone      = "client_gone"
	OutcomeError           = "error"
)

// Families are the metric families gw itself exports (beside the Go
// runtime's go_* and the process's process_*): the Grafana dashboard and
// docs/operations.md are checked against this list, and the server's tests
// against a real scrape. go_sql_* are the database pool's (control plane).
var Families = []string{
	"gw_build_info",
	"gw_inference_requests_total",
	"gw_inference_request_duration_seconds",
	"gw_inference_overhead_seconds",
	"gw_inference_time_to_first_token_seconds",
	"gw_upstream_request_duration_seconds",
	"gw_inference_tokens_total",
	"gw_inference_cost_usd_total",
	"gw_inference_fallbacks_total",
	"gw_budget_refusals_total",
	"gw_rate_limit_refusals_total",
	"gw_usage_sink_queue_depth",
	"gw_usage_spool_depth",
	"gw_bundle_version",
	"gw_bundle_age_seconds",
	"gw_api_requests_total",
	"gw_api_request_duration_seconds",
	"gw_upstream_target_state",
	"go_sql_max_open_connections",
	"go_sql_open_connections",
	"go_sql_in_use_connections",
	"go_sql_idle_connections",
	"go_sql_wait_count_total",
	"go_sql_wait_duration_seconds_total",
	"go_sql_max_idle_closed_total",
	"go_sql_max_idle_time_closed_total",
	"go_sql_max_lifetime_closed_total",
}

// Metrics are one process's collectors, on a registry of their own so that
// tests and several servers in one process do not share counts. A nil
// *Metrics records nothing, which is how the data plane runs without them.
type Metrics struct {
	reg *prometheus.Registry

	inferenceRequests *prometheus.CounterVec
	inferenceDuration *prometheus.HistogramVec
	overhead          *prometheus.HistogramVec
	ttft              *prometheus.HistogramVec
	upstreamDuration  *prometheus.HistogramVec
	tokens            *prometheus.CounterVec
	cost              *prometheus.CounterVec
	fallbacks         *prometheus.CounterVec
	budgetRefusals    *prometheus.CounterVec
	rateRefusals      *prometheus.CounterVec
	apiRequests       *prometheus.CounterVec
	apiDuration       *prometheus.HistogramVec
	targetState       *prometheus.GaugeVec
	mcpOperation      *prometheus.HistogramVec

	// The children every inference request observes (children.go).
	requestsOf, tokensOf, costOf                       *children[prometheus.Counter]
	durationOf, overheadOf, ttftOf, upstreamDurationOf *children[prometheus.Observer]
}

// Latency buckets: model calls take from tens of milliseconds to minutes.
var (
	requestBuckets  = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	overheadBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}
	apiBuckets      = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10}
)

// NewMetrics registers gw's collectors, with the Go runtime's and the
// process's, and gw_build_info for version and role.
func NewMetrics(version, role string) *Metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{reg: reg}
	m.inferenceRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_inference_requests_total",
		Help: "Inference requests by endpoint, model and provider that answered (or were tried), HTTP status and outcome."},
		[]string{"endpoint", "model", "provider", "status", "outcome"})
	m.inferenceDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gw_inference_request_duration_seconds",
		Help: "Whole inference request, from its first byte read to its last byte written.", Buckets: requestBuckets},
		[]string{"endpoint", "model", "provider", "outcome"})
	m.overhead = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gw_inference_overhead_seconds",
		Help: "gw's own time in an inference request: the whole request less its upstream attempts.", Buckets: overheadBuckets},
		[]string{"endpoint"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gw_inference_time_to_first_token_seconds",
		Help: "Streamed requests: from the request's start to the first chunk relayed.", Buckets: requestBuckets},
		[]string{"model", "provider"})
	m.upstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gw_upstream_request_duration_seconds",
		Help: "Each upstream attempt, by model, provider and outcome (ok or how it failed).", Buckets: requestBuckets},
		[]string{"model", "provider", "outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_inference_tokens_total",
		Help: "Tokens metered, by model and provider that answered, and type (input, output, cache_read, cache_write)."},
		[]string{"model", "provider", "type"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_inference_cost_usd_total",
		Help: "Cost metered in US dollars (a float for dashboards; usage reports hold the exact sums)."},
		[]string{"model", "provider"})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_inference_fallbacks_total",
		Help: "Fallbacks to another model, by the failure that triggered them."}, []string{"trigger"})
	m.budgetRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_budget_refusals_total",
		Help: "Requests refused by a budget: exceeded, or unavailable (no lease could be had)."}, []string{"reason"})
	m.rateRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_rate_limit_refusals_total",
		Help: "Requests refused by a rate limit, by the limit (requests or tokens per minute)."}, []string{"limit"})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gw_api_requests_total",
		Help: "Control-plane API requests by method, route pattern and HTTP status."}, []string{"method", "route", "status"})
	m.apiDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gw_api_request_duration_seconds",
		Help: "Control-plane API request latency by method and route pattern.", Buckets: apiBuckets}, []string{"method", "route"})
	m.targetState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gw_upstream_target_state",
		Help: "Upstream targets (a credential and a model) that failed: 1 for the state each is in (healthy, cooling_down, circuit_open, half_open), 0 for the others."},
		[]string{"model", "provider", "credential", "state"})
	// The OpenTelemetry MCP conventions' mcp.server.operation.duration, as
	// Prometheus names it, labelled with the conventions' attributes
	// (dots as underscores) and gw's server name.
	m.mcpOperation = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
		Help: "MCP requests through gw (/inf/v1/mcp): the whole request, by method, gw's MCP server, tool (tools/call) and error type (empty: ok).", Buckets: requestBuckets},
		[]string{"mcp_method_name", "gw_mcp_server", "gen_ai_tool_name", "error_type"})
	m.requestsOf, m.tokensOf, m.costOf = newChildren(m.inferenceRequests.WithLabelValues), newChildren(m.tokens.WithLabelValues),
		newChildren(m.cost.WithLabelValues)
	m.durationOf, m.overheadOf, m.ttftOf = newChildren(m.inferenceDuration.WithLabelValues), newChildren(m.overhead.WithLabelValues),
		newChildren(m.ttft.WithLabelValues)
	m.upstreamDurationOf = newChildren(m.upstreamDuration.WithLabelValues)
	for _, c := range []prometheus.Collector{m.inferenceRequests, m.inferenceDuration, m.overhead, m.ttft, m.upstreamDuration,
		m.tokens, m.cost, m.fallbacks, m.budgetRefusals, m.rateRefusals, m.apiRequests, m.apiDuration, m.targetState, m.mcpOperation} {
		f(c)
	}
	// Series of closed vocabularies start at zero, so that a first
	// refusal shows as an increase and alerts on rate() see it.
	for _, r := range []string{"exceeded", "unavailable"} {
		m.budgetRefusals.WithLabelValues(r)
	}
	for _, l := range []string{"requests", "tokens"} {
		m.rateRefusals.WithLabelValues(l)
	}
	for _, tr := range []string{"rate_limited", "upstream_unavailable", "timeout"} {
		m.fallbacks.WithLabelValues(tr)
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gw_build_info", Help: "Always 1; the labels say what runs.",
		ConstLabels: prometheus.Labels{"version": version, "role": role}})
	build.Set(1)
	f(build)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is where further collectors go (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// GaugeFunc registers a gauge read at scrape time, for depths and flags
// that their owners already keep.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// DB registers the database pool's statistics (go_sql_*{db_name="gw"}).
func (m *Metrics) DB(db *sql.DB) {
	if m == nil {
		return
	}
	m.reg.MustRegister(collectors.NewDBStatsCollector(db, "gw"))
}

// BundleInfo is an admitted bundle as the bundle gauges describe it.
type BundleInfo struct {
	OrgID      string
	Version    int64
	CompiledAt time.Time
}

// Bundles registers gw_bundle_version and gw_bundle_age_seconds per
// organization, read from list at scrape time.
func (m *Metrics) Bundles(list func() []BundleInfo) {
	if m == nil {
		return
	}
	m.reg.MustRegister(bundleCollector{list: list})
}

var (
	bundleVersionDesc = prometheus.NewDesc("gw_bundle_version", "Admitted bundle version per organization.", []string{"org_id"}, nil)
	bundleAgeDesc     = prometheus.NewDesc("gw_bundle_age_seconds",
		"Time since the admitted bundle of each organization was compiled.", []string{"org_id"}, nil)
)

type bundleCollector struct{ list func() []BundleInfo }

func (c bundleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- bundleVersionDesc
	ch <- bundleAgeDesc
}

func (c bundleCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, b := range c.list() {
		ch <- prometheus.MustNewConstMetric(bundleVersionDesc, prometheus.GaugeValue, float64(b.Version), b.OrgID)
		ch <- prometheus.MustNewConstMetric(bundleAgeDesc, prometheus.GaugeValue, now.Sub(b.CompiledAt).Seconds(), b.OrgID)
	}
}

// Inference is one inference request as it ended: what the metrics count
// and what its access log line carries.
type Inference struct {
	Endpoint string
	// RequestedModel is what the caller asked for, only once gw knew it as
	// a visible model; Model and Provider are those that answered (or were
	// tried last).
	RequestedModel, Model, Provider string
	OrgID, WorkspaceID, KeyID       string
	Status                          int
	Outcome                         string
	// Reason is gw's code for a refusal or error ("" for ok).
	Reason                                                       string
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	// CostUSD is the exact decimal cost; CostNanoUSD the same in 1e-9 USD.
	CostUSD     string
	CostNanoUSD int64
	Attempts    int
	Stream      bool
	Duration    time.Duration
	Upstream    time.Duration
	// FirstToken is the time to the first streamed chunk (0: none).
	FirstToken time.Duration
}

// ObserveInference counts a finished inference request.
func (m *Metrics) ObserveInference(in *Inference) {
	if m == nil {
		return
	}
	status := statusText(in.Status)
	m.requestsOf.of(in.Endpoint, in.Model, in.Provider, status, in.Outcome).Inc()
	m.durationOf.of(in.Endpoint, in.Model, in.Provider, in.Outcome).Observe(in.Duration.Seconds())
	if in.Model != "" {
		m.overheadOf.of(in.Endpoint).Observe(max(in.Duration-in.Upstream, 0).Seconds())
	}
	if in.FirstToken > 0 {
		m.ttftOf.of(in.Model, in.Provider).Observe(in.FirstToken.Seconds())
	}
	for _, t := range [...]struct {
		kind string
		n    int64
	}{{"input", in.InputTokens}, {"output", in.OutputTokens}, {"cache_read", in.CacheReadTokens}, {"cache_write", in.CacheWriteTokens}} {
		if t.n > 0 {
			m.tokensOf.of(in.Model, in.Provider, t.kind).Add(float64(t.n))
		}
	}
	if in.CostNanoUSD > 0 {
		m.costOf.of(in.Model, in.Provider).Add(float64(in.CostNanoUSD) / 1e9)
	}
	switch in.Outcome {
	case OutcomeDeniedBudget:
		m.budgetRefusals.WithLabelValues(in.Reason).Inc()
	case OutcomeDeniedRateLimit:
		m.rateRefusals.WithLabelValues(in.Reason).Inc()
	}
}

// ObserveAttempt times one upstream attempt; outcome is ok or how it
// failed (the usage attempt failure words).
func (m *Metrics) ObserveAttempt(model, provider, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.upstreamDurationOf.of(model, provider, outcome).Observe(d.Seconds())
}

// targetStates are the states of gw_upstream_target_state.
var targetStates = []string{"healthy", "cooling_down", "circuit_open", "half_open"}

// SetTargetState records the state an upstream target (a credential and a
// model) is in now; only targets that once failed have series.
func (m *Metrics) SetTargetState(model, provider, credential, state string) {
	if m == nil {
		return
	}
	for _, s := range targetStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.targetState.WithLabelValues(model, provider, credential, s).Set(v)
	}
}

// ObserveMCPOperation times one MCP operation (a tools/call of a tool, or
// another method: tool "") of gw's MCP server; errorType is empty when it succeeded.
func (m *Metrics) ObserveMCPOperation(method, server, tool, errorType string, d time.Duration) {
	if m == nil {
		return
	}
	m.mcpOperation.WithLabelValues(method, server, tool, errorType).Observe(d.Seconds())
}

// ObserveFallback counts a fallback by its trigger.
func (m *Metrics) ObserveFallback(trigger string) {
	if m == nil {
		return
	}
	m.fallbacks.WithLabelValues(trigger).Inc()
}

func (m *Metrics) observeAPI(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.apiRequests.WithLabelValues(method, route, statusText(status)).Inc()
	m.apiDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// statusText avoids strconv for the statuses gw answers most.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 400:
		return "400"
	case 401:
		return "401"
	case 403:
		return "403"
	case 404:
		return "404"
	case 429:
		return "429"
	case 502:
		return "502"
	case 503:
		return "503"
	}
	return strconv.Itoa(code)
}

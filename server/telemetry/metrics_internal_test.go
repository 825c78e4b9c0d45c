package telemetry

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// scrape returns every gw_inference_* and gw_upstream_* series of m as
// "family{label=value,...} value" (a histogram's value is its count).
func scrape(t *testing.T, m *Metrics) []string {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "gw_inference_") && !strings.HasPrefix(f.GetName(), "gw_upstream_request") {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, f.GetName()+"{"+strings.Join(labels, ",")+"} "+value(s))
		}
	}
	sort.Strings(out)
	return out
}

func value(s *dto.Metric) string {
	switch {
	case s.GetCounter() != nil:
		return strconv.FormatFloat(s.GetCounter().GetValue(), 'g', -1, 64)
	case s.GetHistogram() != nil:
		return strconv.FormatUint(s.GetHistogram().GetSampleCount(), 10)
	}
	return "?"
}

// The series the cached children observe are the vectors' own, made at
// their first observation only (a refused request has no tokens or cost
// series, a non-streamed one no time to first token), each counted once
// per observation whatever the order of kinds; and once a kind has been
// seen, observing it again allocates nothing.
func TestObserveInferenceSeries(t *testing.T) {
	m := NewMetrics("x", "y")
	ok := &Inference{Endpoint: "chat.completions", Model: "openai/gpt-4o-mini", Provider: "openai", Status: 200, Outcome: OutcomeOK,
		InputTokens: 19, OutputTokens: 10, CostNanoUSD: 1_500_000_000, Duration: time.Millisecond, Upstream: 500 * time.Microsecond}
	streamed := *ok
	streamed.FirstToken = time.Millisecond
	refused := &Inference{Endpoint: "chat.completions", Status: 429, Outcome: OutcomeDeniedBudget, Reason: "exceeded", Duration: time.Millisecond}
	for _, in := range []*Inference{ok, refused, &streamed, ok} {
		m.ObserveInference(in)
	}
	m.ObserveAttempt("openai/gpt-4o-mini", "openai", "ok", time.Millisecond)
	m.ObserveAttempt("openai/gpt-4o-mini", "openai", "timeout", time.Millisecond)
	m.ObserveAttempt("openai/gpt-4o-mini", "openai", "ok", time.Millisecond)
	// Gather sorts each series' labels by name; the fallbacks' series
	// start at zero.
	want := []string{
		"gw_inference_cost_usd_total{model=openai/gpt-4o-mini,provider=openai} 4.5",
		"gw_inference_fallbacks_total{trigger=rate_limited} 0",
		"gw_inference_fallbacks_total{trigger=timeout} 0",
		"gw_inference_fallbacks_total{trigger=upstream_unavailable} 0",
		"gw_inference_overhead_seconds{endpoint=chat.completions} 3",
		"gw_inference_request_duration_seconds{endpoint=chat.completions,model=,outcome=denied_budget,provider=} 1",
		"gw_inference_request_duration_seconds{endpoint=chat.completions,model=openai/gpt-4o-mini,outcome=ok,provider=openai} 3",
		"gw_inference_requests_total{endpoint=chat.completions,model=,outcome=denied_budget,provider=,status=429} 1",
		"gw_inference_requests_total{endpoint=chat.completions,model=openai/gpt-4o-mini,outcome=ok,provider=openai,status=200} 3",
		"gw_inference_time_to_first_token_seconds{model=openai/gpt-4o-mini,provider=openai} 1",
		"gw_inference_tokens_total{model=openai/gpt-4o-mini,provider=openai,type=input} 57",
		"gw_inference_tokens_total{model=openai/gpt-4o-mini,provider=openai,type=output} 30",
		"gw_upstream_request_duration_seconds{model=openai/gpt-4o-mini,outcome=ok,provider=openai} 2",
		"gw_upstream_request_duration_seconds{model=openai/gpt-4o-mini,outcome=timeout,provider=openai} 1",
	}
	if got := scrape(t, m); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := testing.AllocsPerRun(100, func() {
		m.ObserveInference(ok)
		m.ObserveAttempt("openai/gpt-4o-mini", "openai", "ok", time.Millisecond)
	}); n != 0 {
		t.Errorf("observing a kind seen before allocates %.0f times", n)
	}
}

// Kinds first seen by several requests at once each get one series.
func TestObserveInferenceConcurrently(t *testing.T) {
	m := NewMetrics("x", "y")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				m.ObserveInference(&Inference{Endpoint: "chat.completions", Model: "m" + strconv.Itoa(i%5), Provider: "openai", Status: 200,
					Outcome: OutcomeOK, InputTokens: 1, Duration: time.Millisecond})
				m.ObserveAttempt("m"+strconv.Itoa((i+g)%5), "openai", "ok", time.Millisecond)
			}
		})
	}
	wg.Wait()
	got := map[string]bool{}
	for _, line := range scrape(t, m) {
		got[line] = true
	}
	for i := range 5 {
		model := "m" + strconv.Itoa(i)
		for _, want := range []string{
			"gw_inference_requests_total{endpoint=chat.completions,model=" + model + ",outcome=ok,provider=openai,status=200} 320",
			"gw_inference_tokens_total{model=" + model + ",provider=openai,type=input} 320",
			"gw_upstream_request_duration_seconds{model=" + model + ",outcome=ok,provider=openai} 320",
		} {
			if !got[want] {
				t.Errorf("missing %s in\n%s", want, strings.Join(scrape(t, m), "\n"))
			}
		}
	}
}

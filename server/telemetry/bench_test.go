package telemetry

// BenchmarkObserveInference is what the metrics add to one non-streaming
// request that answers at the first attempt (docs/operations.md).
import (
	"testing"
	"time"
)

func BenchmarkObserveInference(b *testing.B) {
	m := NewMetrics("x", "y")
	in := &Inference{Endpoint: "chat.completions", Model: "openai/gpt-4o-mini", Provider: "openai", Status: 200, Outcome: "ok", InputTokens: 19, OutputTokens: 10, CostNanoUSD: 12345, Duration: time.Millisecond, Upstream: 500 * time.Microsecond}
	for b.Loop() {
		m.ObserveInference(in)
		m.ObserveAttempt("openai/gpt-4o-mini", "openai", "ok", time.Millisecond)
	}
}

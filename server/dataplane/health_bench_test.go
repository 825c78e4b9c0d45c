package dataplane

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/providers"
)

// BenchmarkTargetHealth measures what routing that learns adds to every
// attempt (admit before the call, record after it) against a baseline of
// one map lookup under a read lock, the least any shared lookup costs.
// healthy is the common case: no target ever failed. with_failed_targets
// has 1,000 other targets in the book; cooling is a target being skipped.
func BenchmarkTargetHealth(b *testing.B) {
	cred, model, now := uuid.New(), "openai/gpt-4o-mini", time.Unix(1_800_000_000, 0)
	b.Run("baseline_map_lookup", func(b *testing.B) {
		h := newHealthBook(nil)
		b.ReportAllocs()
		for b.Loop() {
			_ = h.get(targetKey{cred, model})
		}
	})
	b.Run("healthy", func(b *testing.B) {
		h := newHealthBook(nil)
		b.ReportAllocs()
		for b.Loop() {
			_ = h.admit(cred, model, now)
			h.record(cred, model, "openai", nil, now)
		}
	})
	b.Run("with_failed_targets", func(b *testing.B) {
		h := newHealthBook(nil)
		for range 1000 {
			h.record(uuid.New(), model, "openai", &providers.Error{Kind: providers.Unavailable, Status: 500}, now)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = h.admit(cred, model, now)
			h.record(cred, model, "openai", nil, now)
		}
	})
	b.Run("cooling", func(b *testing.B) {
		h := newHealthBook(nil)
		h.record(cred, model, "openai", &providers.Error{Kind: providers.RateLimited, Status: 429, RetryAfter: "60"}, now)
		b.ReportAllocs()
		for b.Loop() {
			_ = h.admit(cred, model, now)
		}
	})
}

package dataplane

import (
	"context"
	"time"
)

// The completion window (docs/batches.md): a batch gw's runner runs that
// still has lines pending once its window has passed (created_at + 24h,
// by the plane's clock) ends expired, as OpenAI's and Anthropic's do. Its
// pending lines are never sent (no usage event, no cost); a line running
// then ends as it would have. Lines in a provider's batch are left to
// that provider's own window (batchnative.go).

// defaultCompletionWindow is the only window a batch is created with.
const defaultCompletionWindow = 24 * time.Hour

// batchExpiredCode and batchExpiredMessage are an expired line's error in
// the error file, OpenAI's.
const (
	batchExpiredCode    = "batch_expired"
	batchExpiredMessage = "This request could not be executed before the completion window expired."
)

// batchWindow is b's completion window ("24h").
func batchWindow(b *Batch) time.Duration {
	if d, err := time.ParseDuration(b.CompletionWindow); err == nil && d > 0 {
		return d
	}
	return defaultCompletionWindow
}

// expireBatch ends b's pending lines as expired once its window has
// passed. It is asked at every pass of a batch past its window: a line
// given back to pending since (a rate limit's requeue) expires too, never
// sent.
func (p *Plane) expireBatch(ctx context.Context, b *Batch) {
	if b.Status != batchInProgress || p.now().Before(b.CreatedAt.Add(batchWindow(b))) {
		return
	}
	if _, err := p.batches.ExpireLines(ctx, b.ID, p.now()); err != nil && ctx.Err() == nil {
		p.inference.log.Warn("batches: expiring the pending lines", "batch_id", b.ID, "error", err)
	}
}

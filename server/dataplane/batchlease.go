package dataplane

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// BatchRunnerLease is a BatchStore that several processes share directly:
// the replicas of the all-in-one gw on one database. One process at a
// time runs the batch runner's passes (gw's line sending and the native
// groups' steps), so no two processes find the same native group
// submitting and create its provider batch twice; the others wait, and
// one takes over when the holder stops (it gives the lease back) or
// lapses (it died). A remote data plane's store has none: remote planes
// share a batch line by line through the control plane's takes.
type BatchRunnerLease interface {
	// TakeRunnerLease takes, or renews, the runner's lease for holder
	// until ttl from now: false while another process holds it.
	TakeRunnerLease(ctx context.Context, holder string, ttl time.Duration) (bool, error)
	// ReleaseRunnerLease gives it back, if holder has it.
	ReleaseRunnerLease(ctx context.Context, holder string) error
}

// runnerLeasePaces is the runner's lease's term, in paces (30 s at the
// default pace); it is renewed every third of it.
const runnerLeasePaces = 300

// runLeased runs the batches' passes while this process holds the
// runner's lease, renewing it as they run; a pass whose lease is lost (not
// renewed: taken over, or the store unreachable) stops — a line in flight
// still ends and is recorded — and the process waits for the lease again.
// Each time it takes the lease it starts afresh (runBatches), so the lines
// the last holder left running are ended as interrupted, as at a start.
func (p *Plane) runLeased(ctx context.Context, l BatchRunnerLease) {
	holder := uuid.NewString()
	ttl := runnerLeasePaces * p.runner.pace
	defer func() {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := l.ReleaseRunnerLease(release, holder); err != nil {
			p.inference.log.Warn("batches: giving the runner's lease back", "error", err)
		}
	}()
	renew := time.NewTicker(ttl / 3)
	defer renew.Stop()
	for ctx.Err() == nil {
		if ok, err := l.TakeRunnerLease(ctx, holder, ttl); err != nil || !ok {
			if err != nil && ctx.Err() == nil {
				p.inference.log.Warn("batches: taking the runner's lease", "error", err)
			}
			// Another process runs the lines: the batches this one
			// accepted still have their holds kept (batchhold.go).
			p.tendHolds(ctx)
			select {
			case <-ctx.Done():
			case <-renew.C:
			}
			continue
		}
		pass, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.runBatches(pass) }()
	held:
		for {
			select {
			case <-done:
				break held
			case <-renew.C:
				if ok, err := l.TakeRunnerLease(ctx, holder, ttl); err != nil || !ok {
					stop()
				}
			}
		}
		stop()
	}
}

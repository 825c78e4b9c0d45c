package dataplane

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/tokens"
)

// traceWrites starts watching the attempt about to be made: once net/http
// has written its request's last byte, the upstream has the whole request
// and may bill its input, however the attempt ends (unanswered).
//
// The hook reaches only the attempt's own writeTrace, never the exchange:
// the context it rides in outlives the request wherever a stopped timer
// holds it (the runtime keeps a stopped timer and all its callback reaches
// until the time it was set for, or until its heap is next cleaned — an
// attempt's timeout, a budget lease's), and through the exchange it held
// the whole request body: a 30 MiB body stayed live a minute after its
// answer (issue 17's memory test, found with a heap dump). A hook that
// fires late, for an attempt already over, marks only that attempt's
// trace.
func (x *exchange) traceWrites(ctx context.Context) context.Context {
	x.sentCall = nil
	t := &writeTrace{}
	t.WroteRequest = func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			t.sent.Store(true)
		}
	}
	x.trace = t
	return httptrace.WithClientTrace(ctx, &t.ClientTrace)
}

// writeTrace is one attempt's hook on its upstream request and whether the
// request went out whole.
type writeTrace struct {
	httptrace.ClientTrace
	sent atomic.Bool
}

// bodySent is whether the attempt in flight's request went out whole.
func (x *exchange) bodySent() bool {
	return x.trace != nil && x.trace.sent.Load()
}

// unanswered is the usage of a request that ended on a failed attempt:
// nothing when the upstream never had the whole request or refused it
// (an error status: providers bill no refused request); otherwise — the
// caller left before the first byte of the answer, a timeout or shutdown
// ended the call, a 200 came back cut off or unreadable — its input
// counted from the request, as for an answer without usage: a request
// that reached an upstream which took its body is billed at least its
// input, whoever hung up and whatever came back.
func (x *exchange) unanswered(f *providers.Error) providers.Usage {
	if x.sentCall == nil || !x.bodySent() || f.Status >= 300 {
		return providers.Usage{}
	}
	return providers.Unanswered(x.sentCall)
}

// inputFloor is the floor of the request's input on rt when the body was
// counted already (for its budgets' bound), for the adapter to check the
// upstream's count against; nil leaves the counting to the adapter.
func (x *exchange) inputFloor(rt *route) *int64 {
	c := tokens.ForModel(rt.model.model.UpstreamModel())
	if r, ok := x.counts.of(c); ok && c.Exact() {
		return &r.Floor
	}
	return nil
}

package dataplane

import (
	"context"
	"net/http/httptrace"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/tokens"
)

// traceWrites starts watching the attempt about to be made: once net/http
// has written its request's last byte, the upstream has the whole request
// and may bill its input, however the attempt ends (unanswered).
func (x *exchange) traceWrites(ctx context.Context) context.Context {
	x.sentCall = nil
	x.bodySent.Store(false)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			x.bodySent.Store(true)
		}
	}})
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
	if x.sentCall == nil || !x.bodySent.Load() || f.Status >= 300 {
		return providers.Usage{}
	}
	return providers.Unanswered(x.sentCall)
}

// inputFloor is the floor of the request's input on rt when the body was
// counted already (for its budgets' bound), for the adapter to check the
// upstream's count against; nil leaves the counting to the adapter.
func (x *exchange) inputFloor(rt *route) *int64 {
	c := tokens.ForModel(rt.model.model.UpstreamModel())
	if r, ok := x.counts[c]; ok && c.Exact() {
		return &r.Floor
	}
	return nil
}

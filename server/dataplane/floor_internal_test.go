package dataplane

import (
	"context"
	"net/http/httptrace"
	"runtime"
	"testing"
)

// An attempt's context may outlive its request (a stopped timer keeps its
// callback, and the context the callback cancels, until the time it was
// set for), so it must not reach the exchange, which holds the request's
// body: the exchange is collected while its attempt's context is still
// held.
func TestAttemptContextLetsTheExchangeGo(t *testing.T) {
	x := &exchange{body: make([]byte, 1<<20)}
	freed := make(chan struct{})
	runtime.AddCleanup(x, func(ch chan struct{}) { close(ch) }, freed)
	ctx := x.traceWrites(context.Background())
	x = nil
	waitCollected(t, freed, "the exchange is still reachable from its attempt's context")
	runtime.KeepAlive(ctx)
}

// The hook marks its own attempt: a request of an earlier attempt that
// finishes writing late does not make the next attempt's body count as
// sent.
func TestWriteTraceMarksItsOwnAttempt(t *testing.T) {
	x := &exchange{}
	if x.bodySent() {
		t.Fatal("sent before any attempt")
	}
	first := httptrace.ContextClientTrace(x.traceWrites(context.Background()))
	first.WroteRequest(httptrace.WroteRequestInfo{})
	if !x.bodySent() {
		t.Fatal("the first attempt's written request is not marked sent")
	}
	second := httptrace.ContextClientTrace(x.traceWrites(context.Background()))
	first.WroteRequest(httptrace.WroteRequestInfo{})
	if x.bodySent() {
		t.Fatal("the first attempt's late hook marked the second attempt")
	}
	second.WroteRequest(httptrace.WroteRequestInfo{Err: context.Canceled})
	if x.bodySent() {
		t.Fatal("a failed write marked the request sent")
	}
	second.WroteRequest(httptrace.WroteRequestInfo{})
	if !x.bodySent() {
		t.Fatal("the second attempt's written request is not marked sent")
	}
}
